// pipeline.autotune end to end (the embedding API, real actors): a trainer that first takes
// batches slowly, then as fast as it can while two competing processes keep the cores busy,
// then slowly again once they are gone. The node gives up workers or window while the trainer
// sets the pace, takes more while it waits, gives them up again, and every epoch it runs holds
// every sample exactly once.
//
// Each phase ends on a decision the node logs: below where it began (slow), above where it began
// (loaded: a growth on trial counts, kept or not), below that (slow again).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <conveyor/pipeline.hpp>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr int images = 23;

std::filesystem::path setup(const temp_dir& dir) {
  const auto folder = testing::make_image_folder(dir, images);
  auto file = dir / "node.toml";
  std::ofstream(file) << "[dataset]\npath = \"" << folder.string()
                      << "\"\nformat = \"folder\"\n"
                         "[pipeline]\nbatch_size = 3\nprefetch_batches = 2\npreprocessors = 2\n"
                         "autotune = true\n"
                         "[batching]\npolicy = \"latency_aware\"\n"
                         "[trainer]\nepochs = 100000\n[monitor]\ninterval_ms = 100\n"
                         "[[transform]]\nop = \"decode\"\n"
                         "[[transform]]\nop = \"center_crop\"\nsize = [16, 12]\n"
                         "[[transform]]\nop = \"to_uint8\"\n";
  return file;
}

// Processes that keep a core busy each until destroyed (killed and reaped).
class competing_load {
 public:
  explicit competing_load(int processes) {
    for (int i = 0; i < processes; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
        _exit(127);
      }
      if (pid > 0) {
        pids_.push_back(pid);
      }
    }
  }
  ~competing_load() {
    for (pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  competing_load(const competing_load&) = delete;
  competing_load& operator=(const competing_load&) = delete;
  std::size_t size() const noexcept { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

struct counts {
  int preprocessors = 0;
  int readers = 0;
  double window = 0;
};

counts counts_of(const pipeline_report& r) {
  counts c;
  for (const auto& [name, value] : r.autotune_counts) {
    if (name == "preprocessors") {
      c.preprocessors = static_cast<int>(value);
    } else if (name == "readers") {
      c.readers = static_cast<int>(value);
    } else if (name == "window") {
      c.window = value;
    }
  }
  return c;
}

bool fewer(const counts& a, const counts& b) {
  return a.preprocessors < b.preprocessors || a.readers < b.readers || a.window < b.window;
}

// The phases of the run, each ended by what the node did in it.
enum class phase { slow, loaded, slow_again, done };

TEST(AutotunePipeline, CountsFollowTheTrainerAndTheLoadBothWaysAndNothingIsLost) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  using clock = std::chrono::steady_clock;
  // Each phase ends when the node acts, or fails the test after this long.
  constexpr auto bound = std::chrono::seconds(120);
  auto phase_end = clock::now() + bound;
  phase now = phase::slow;
  counts start{};   // where the autotuner began
  counts before{};  // at the last phase's end
  std::unique_ptr<competing_load> load;
  std::vector<std::string> seen_counts;
  std::uint64_t epochs_checked = 0;
  for (std::uint64_t e = 0; e < p->epochs() && now != phase::done; ++e) {
    std::multiset<std::uint64_t> seen;
    for (auto& b : p->epoch(e, 0)) {
      seen.insert(b.sample_ids().begin(), b.sample_ids().end());
      if (now != phase::loaded) {
        // The trainer sets the pace: a step of 30 ms per batch of 3.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      }
      const auto c = counts_of(p->report());
      if (c.preprocessors == 0) {
        continue;  // the autotuner has not started yet
      }
      if (start.preprocessors == 0) {
        start = before = c;
      }
      seen_counts.push_back(std::to_string(c.preprocessors) + "/" + std::to_string(c.readers) +
                            "/" + std::to_string(static_cast<int>(c.window)));
      // Loaded, it must grow past where it began (not only take a shrink back).
      const bool shrank = now != phase::loaded && fewer(c, before);
      const bool grew = now == phase::loaded && fewer(start, c);
      if (shrank || grew) {
        before = c;
        now = static_cast<phase>(static_cast<int>(now) + 1);
        load = now == phase::loaded ? std::make_unique<competing_load>(2) : nullptr;
        phase_end = clock::now() + bound;
      }
      ASSERT_LT(clock::now(), phase_end)
          << "phase " << static_cast<int>(now) << ": the counts did not move; seen "
          << seen_counts.size() << " readings, the last " << seen_counts.back();
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(images)) << "epoch " << e;
    EXPECT_EQ(std::set<std::uint64_t>(seen.begin(), seen.end()).size(),
              static_cast<std::size_t>(images))
        << "epoch " << e;
    ++epochs_checked;
  }
  EXPECT_EQ(now, phase::done);
  const auto r = p->report();
  EXPECT_GE(r.autotune_changes, 2u);
  EXPECT_EQ(r.duplicates, 0u);
  EXPECT_EQ(r.quarantined, 0u);
  EXPECT_GE(r.delivered, epochs_checked * images);
  p->shutdown();
}

}  // namespace
}  // namespace conveyor

// Supervision with real actors, real JPEGs and real files: injected crashes in every role,
// poison samples, a hung worker, and a restart budget that runs out. Every run must account
// for each sample exactly once (delivered or quarantined by name) and never hang; CTest's
// timeout catches a hang.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/base/log.hpp"
#include "support/pipeline_harness.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::dataset_size;
using testing::temp_dir;
using testing::trainer_log;

// Records what the supervisors log, to check that restarts are logged.
class supervisor_log {
 public:
  supervisor_log() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096)) {
    log("supervisor")->sinks().push_back(sink_);
  }
  ~supervisor_log() { log("supervisor")->sinks().pop_back(); }
  bool contains(const std::string& text) const {
    for (const auto& line : sink_->last_formatted()) {
      if (line.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// Restarts come fast and without limit that a drill could reach.
supervision_settings generous(restart_strategy strategy) {
  return {strategy, {100000, 10000ms, 0ms, 2ms, 1}, 0ms};
}

// Every sample handed to a straggler actor after its first step, so all three roles hold
// samples when they crash.
pipeline_spec crash_drill(const std::filesystem::path& dir, double p, restart_strategy strategy) {
  auto spec = testing::make_spec(dir, 2, 2);
  spec.policy = batching_policy::latency_aware;
  spec.settings.hand_off = true;
  spec.settings.fixed_budget_ns = 1;
  spec.settings.workers = 3;
  spec.settings.max_sample_retries = 100;  // the culprit is charged; at 10% it crashes again
  spec.stragglers = 2;
  spec.supervision = generous(strategy);
  spec.faults.crash_reader = p;
  spec.faults.crash_preprocessor = p;
  spec.faults.crash_straggler = p;
  spec.faults.seed = 3;
  return spec;
}

struct drill_case {
  double crash_probability;
  restart_strategy strategy;
};

class CrashDrill : public ::testing::TestWithParam<drill_case> {};

TEST_P(CrashDrill, EveryRoleCrashesAndNothingIsLostOrDuplicated) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  supervisor_log logged;
  trainer_log log;
  pipeline_figures figures;
  std::uint64_t restarts = 0;
  {
    pipeline_runtime rt(crash_drill(dir.path(), GetParam().crash_probability, GetParam().strategy));
    testing::run_trainers(rt, 2, 2, log);
    figures = rt.status()->figures();
    restarts = rt.status()->restarts();
    EXPECT_FALSE(rt.status()->failure().has_value()) << rt.status()->failure()->what();
  }
  EXPECT_TRUE(log.problems.empty()) << log.problems.front();
  testing::expect_every_sample_once(log, 2);
  EXPECT_EQ(figures.totals.quarantined, 0u);
  EXPECT_EQ(figures.totals.duplicates + figures.totals.lost, 0u);
  EXPECT_GT(restarts, 0u);
  EXPECT_GT(figures.retries, 0u);
  EXPECT_TRUE(logged.contains("restarting")) << "restarts are logged";
  EXPECT_TRUE(logged.contains("injected crash"));
}

INSTANTIATE_TEST_SUITE_P(Faults, CrashDrill,
                         ::testing::Values(drill_case{0.01, restart_strategy::one_for_one},
                                           drill_case{0.10, restart_strategy::one_for_one},
                                           drill_case{0.10, restart_strategy::one_for_all},
                                           drill_case{0.10, restart_strategy::rest_for_one}));

// A folder dataset: 12 good images and four poison samples.
std::set<std::string> write_poisoned_folder(const std::filesystem::path& root) {
  auto dir = root / "cls";
  std::filesystem::create_directories(dir);
  for (int i = 0; i < 12; ++i) {
    testing::write_file(dir / ("good_" + std::to_string(i) + ".jpg"),
                        testing::make_jpeg(48, 40, static_cast<std::uint64_t>(i)));
  }
  auto jpeg = testing::make_jpeg(48, 40, 99);
  jpeg.resize(jpeg.size() / 2);
  testing::write_file(dir / "truncated.jpg", jpeg);
  std::vector<std::uint8_t> noise(2000);
  for (std::size_t i = 0; i < noise.size(); ++i) {
    noise[i] = static_cast<std::uint8_t>(i * 7919U >> 3U);
  }
  testing::write_file(dir / "random.jpg", noise);
  testing::write_file(dir / "empty.jpg", {});
  // Listed like any image, unreadable when its turn comes (also for root).
  std::filesystem::create_symlink(root / "no-such-file.jpg", dir / "unreadable.jpg");
  return {(dir / "truncated.jpg").string(), (dir / "random.jpg").string(),
          (dir / "empty.jpg").string(), (dir / "unreadable.jpg").string()};
}

std::vector<std::string> report_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

TEST(PoisonSamples, AreRetriedThenQuarantinedByNameAndReported) {
  temp_dir dir;
  auto poison = write_poisoned_folder(dir / "data");
  auto spec = testing::make_spec(dir / "data", 1, 1, dataset_format::folder);
  spec.settings.max_sample_retries = 2;
  auto report = quarantine_report::open((dir / "quarantine.tsv").string());
  ASSERT_TRUE(report);
  spec.quarantine = *report;
  trainer_log log;
  pipeline_figures figures;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, 1, 1, log);
    figures = rt.status()->figures();
  }
  EXPECT_EQ(log.ledger.summary(0).delivered, 12u);
  EXPECT_EQ(figures.totals.quarantined, 4u);
  EXPECT_EQ(figures.totals.lost + figures.totals.duplicates, 0u);
  EXPECT_EQ(figures.retries, 4u * 2u);  // each poison sample tried three times
  std::set<std::string> keys;
  for (const auto& q : figures.quarantined) {
    keys.insert(q.key);
    EXPECT_NE(q.reason.find("failed 3 times"), std::string::npos) << q.reason;
  }
  EXPECT_EQ(keys, poison);
  auto lines = report_lines(dir / "quarantine.tsv");
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "epoch\tsample\tkey\treason");
  for (const auto& key : poison) {
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& l) { return l.find(key) != std::string::npos; }),
              1)
        << key;
  }
}

TEST(HungWorker, IsDeclaredHungReplacedAndItsSampleIssuedAgain) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  auto spec = testing::make_spec(dir.path(), 1, 1);
  spec.supervision = generous(restart_strategy::one_for_one);
  spec.supervision.hang_timeout = 100ms;
  spec.settings.max_sample_retries = 5;
  spec.faults.delay_ms = 600000;  // ten minutes: only the hang detection can end it
  spec.faults.delay_probability = 0.05;
  spec.faults.seed = 2;
  trainer_log log;
  std::uint64_t hangs = 0;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, 1, 1, log);
    hangs = rt.status()->hangs();
    EXPECT_EQ(rt.status()->figures().totals.quarantined, 0u);
  }
  EXPECT_GT(hangs, 0u);
  testing::expect_every_sample_once(log, 1);
}

TEST(RestartBudget, WhenSpentStopsThePipelineWithAClearErrorAndNoHang) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  auto spec = testing::make_spec(dir.path(), 2, 1);
  spec.supervision = {restart_strategy::one_for_one, {3, 60000ms, 1ms, 2ms, 1}, 0ms};
  spec.faults.crash_preprocessor = 1.0;  // every sample kills its preprocessor
  pipeline_runtime rt(std::move(spec));
  // The trainers are woken with the end of their channels, not left waiting.
  EXPECT_EQ(rt.status()->channel(0)->pop(), nullptr);
  EXPECT_EQ(rt.status()->channel(1)->pop(), nullptr);
  auto failure = rt.status()->failure();
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->code(), errc::worker_failed);
  std::string what = failure->what();
  EXPECT_NE(what.find("preprocessor supervisor gave up"), std::string::npos) << what;
  EXPECT_NE(what.find("supervision.max_restarts"), std::string::npos) << what;
  EXPECT_NE(what.find("injected crash"), std::string::npos) << what;
}  // ~pipeline_runtime must return: CTest's timeout fails the test otherwise

}  // namespace
}  // namespace conveyor

// conveyor-node serving trainer processes, as they run it: the real node binary, clients in
// their own processes (forked), real Unix sockets and shared memory. Every wait is bounded by
// the client's own timeouts or a deadline on the node's exit; nothing sleeps.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <conveyor/client.hpp>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/serving_node.hpp"

namespace conveyor {
namespace {

using namespace testing;

constexpr int images = 24;
constexpr int epochs = 2;

std::string topology(const temp_dir& dir, int gpus, int jobs) {
  return serving_topology(dir, gpus, jobs, images, epochs);
}

std::string node_json(const temp_dir& dir) {
  return file_text(dir, "node.out");
}

void expect_each_sample_once(const epoch_ids& seen) {
  testing::expect_each_sample_once(seen, images, epochs);
}

TEST(Serving, TwoRanksInTwoProcessesSplitEveryEpochExactlyOnce) {
  temp_dir dir;
  auto node = start_node(dir, topology(dir, 2, 1));
  auto socket = (dir / "node.sock").string();
  auto rank0 = spawn_client([&](int) { return consume_all(socket, 0, 0); });
  auto rank1 = spawn_client([&](int) { return consume_all(socket, 1, 0); });
  auto ids0 = parse_ids(rank0.collect());
  auto ids1 = parse_ids(rank1.collect());
  for (std::uint64_t e = 0; e < epochs; ++e) {
    EXPECT_EQ(ids0[e].size(), ids1[e].size()) << "ranks step together: equal shares";
    for (auto id : ids0[e]) {
      EXPECT_EQ(ids1[e].count(id), 0u) << "sample " << id << " went to both ranks";
    }
  }
  merge_into(ids0, ids1);
  expect_each_sample_once(ids0);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  EXPECT_EQ(json_field(node_json(dir), "samples_per_job"), "[48]");
}

TEST(Serving, TwoJobsEachGetEverySampleWhileEachIsPreparedOnce) {
  temp_dir dir;
  auto node = start_node(dir, topology(dir, 1, 2));
  auto socket = (dir / "node.sock").string();
  auto job0 = spawn_client([&](int) { return consume_all(socket, 0, 0); });
  auto job1 = spawn_client([&](int) { return consume_all(socket, 0, 1); });
  expect_each_sample_once(parse_ids(job0.collect()));
  expect_each_sample_once(parse_ids(job1.collect()));
  ASSERT_EQ(node.wait(60000), 0) << node_story(dir);
  auto json = node_json(dir);
  EXPECT_EQ(json_field(json, "samples_per_job"), "[48,48]");
  // 4 steps per sample, once per epoch for both jobs: prepared once, served twice.
  EXPECT_EQ(json_field(json, "steps_executed"), std::to_string(images * epochs * 4));
  // The dataset is opened once (one line per open): an S3 manifest is fetched, a WebDataset's
  // tars are walked, once.
  EXPECT_EQ(count_of(file_text(dir, "node.err"), "[node] dataset "), 1u) << node_story(dir);
}

TEST(Serving, AClientKilledMidEpochLosesNothing) {
  temp_dir dir;
  auto node = start_node(dir, topology(dir, 1, 1));
  auto socket = (dir / "node.sock").string();
  // The first client releases two batches, holds a third, says so, and is killed.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  auto doomed = spawn_client([&](int out) {
    ::close(ready[0]);
    auto feed = client::attach(socket, 0, 0, patient());
    std::ostringstream released;
    std::vector<batch> held;
    for (int i = 0; i < 3 && feed; ++i) {
      auto b = feed->next();
      if (!b) {
        break;
      }
      if (i < 2) {
        for (auto id : b->sample_ids()) {
          released << b->epoch() << " " << id << "\n";
        }
        b->release();
      } else {
        held.push_back(std::move(*b));
      }
    }
    auto text = released.str();
    (void)!::write(out, text.data(), text.size());
    ::close(out);
    (void)!::write(ready[1], "x", 1);
    ::pause();  // until SIGKILL
    return std::string();
  });
  ::close(ready[1]);
  char x = 0;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  ::close(ready[0]);
  ::kill(doomed.proc.pid, SIGKILL);
  auto first = parse_ids(doomed.collect(128 + SIGKILL));
  EXPECT_EQ(first[0].size(), 8u);
  auto heir = spawn_client([&](int) { return consume_all(socket, 0, 0); });
  auto all = parse_ids(heir.collect());
  merge_into(all, first);
  expect_each_sample_once(all);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  EXPECT_EQ(json_field(node_json(dir), "lost_clients"), "1");
}

TEST(Serving, BadAttachesAreClearErrorsAndADeadNodeIsAnErrorNotAHang) {
  temp_dir dir;
  auto socket = (dir / "node.sock").string();
  auto nobody = client::attach(socket, 0, 0);
  ASSERT_FALSE(nobody);
  EXPECT_EQ(nobody.error().code(), errc::not_found);
  EXPECT_NE(nobody.error().message().find(socket), std::string::npos) << nobody.error().what();

  auto node = start_node(dir, topology(dir, 1, 1));
  auto feed = client::attach(socket, 0, 0, patient());
  ASSERT_TRUE(feed) << feed.error().what();
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "only the node's user may attach by default";
  auto expect_refused = [&](int rank, int job, const std::string& says) {
    auto c = client::attach(socket, rank, job);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().code(), errc::invalid_argument);
    EXPECT_NE(c.error().message().find(says), std::string::npos) << c.error().what();
  };
  expect_refused(5, 0, "rank 5 is not one of the 1 ranks");
  expect_refused(0, 3, "job 3 is not one of the 1 jobs");
  expect_refused(0, 0, "attached as rank 0 of job 0 already");
  expect_refused(-1, 0, "must be >= 0");
  EXPECT_EQ(feed->info().batch_size, 4u);
  EXPECT_EQ(feed->info().height, 16);

  auto b = feed->next();
  ASSERT_TRUE(b) << b.error().what();
  EXPECT_EQ(b->tensor().shape[1], 3);
  ::kill(node.pid, SIGKILL);
  EXPECT_EQ(node.wait(60000), 128 + SIGKILL);
  b->release();  // to a node that has gone: nothing happens
  auto next = feed->next();
  for (int i = 0; next && i < 8; ++i) {
    next = feed->next();  // batches already announced may still come
  }
  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().code(), errc::disconnected) << next.error().what();
}

// The ids of `batches` batches of (rank, job), its state saved to `state_file`; resumed from
// `resume_file` when it is not empty.
std::string consume_some(const std::string& socket, int rank, int batches,
                         const std::filesystem::path& state_file) {
  auto feed = client::attach(socket, rank, 0, patient());
  if (!feed) {
    return "error " + feed.error().what() + "\n";
  }
  std::ostringstream out;
  for (int i = 0; i < batches; ++i) {
    auto b = feed->next();
    if (!b) {
      return "error " + b.error().what() + "\n";
    }
    for (auto id : b->sample_ids()) {
      out << b->epoch() << " " << id << "\n";
    }
  }
  auto state = feed->state();
  if (!state) {
    out << "error " << state.error().what() << "\n";
  } else if (auto saved = state->save(state_file); !saved) {
    out << "error " << saved.error().what() << "\n";
  }
  return out.str();
}

// The rest of the run for (rank, job 0), attached with the state in `state_file`.
std::string consume_rest(const std::string& socket, int rank,
                         const std::filesystem::path& state_file) {
  auto options = patient();
  auto state = run_state::load(state_file);
  if (!state) {
    return "error " + state.error().what() + "\n";
  }
  options.resume = *state;
  auto feed = client::attach(socket, rank, 0, options);
  if (!feed) {
    return "error " + feed.error().what() + "\n";
  }
  std::ostringstream out;
  for (auto e = feed->info().start_epoch; e < feed->epochs(); ++e) {
    for (auto& b : feed->epoch(e)) {
      for (auto id : b.sample_ids()) {
        out << b.epoch() << " " << id << "\n";
      }
    }
  }
  return out.str();
}

// The topology file `file` with `pattern` replaced by `with`.
void rewrite(const std::string& file, const std::string& pattern, const std::string& with) {
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream all;
    all << in.rdbuf();
    text = std::regex_replace(all.str(), std::regex(pattern), with);
  }
  std::ofstream(file) << text;
}

class ServingResume : public ::testing::TestWithParam<bool> {};

// A job of 2 ranks takes 4 batches each (into epoch 1), saves each rank's state, and is gone
// with its node (SIGKILL). A new node with serve.resume starts once both ranks attached with
// their states: between them, they get exactly the samples no rank had. The same in blocks
// (the clients' states name the order the node sent them).
TEST_P(ServingResume, ARestartedJobGoesOnFromItsRanksStatesExactly) {
  temp_dir dir;
  auto file = topology(dir, 2, 1);
  if (GetParam()) {
    rewrite(file, "\\[dataset\\]\n",
            "[dataset]\nshuffle = \"blocks\"\nshuffle_block = \"4K\"\nshuffle_span = 3\n");
  }
  auto socket = (dir / "node.sock").string();
  std::string before;
  {
    auto node = start_node(dir, file);
    std::vector<child> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(spawn_client([&, r](int) {
        return consume_some(socket, r, 4, dir / ("rank" + std::to_string(r) + ".state"));
      }));
    }
    for (auto& r : ranks) {
      before += r.collect();
    }
    ::kill(node.pid, SIGKILL);
    node.wait(60000);
  }
  // A client with a state is refused by a node that did not start to resume.
  {
    auto node = start_node(dir, file);
    auto refused = consume_rest(socket, 0, dir / "rank0.state");
    EXPECT_NE(refused.find("serve.resume"), std::string::npos) << refused;
    ::kill(node.pid, SIGKILL);
    node.wait(60000);
  }
  rewrite(file, "jobs = 1", "jobs = 1\nresume = true");
  auto node = start_node(dir, file);
  std::string after;
  std::vector<child> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(spawn_client([&, r](int) {
      return consume_rest(socket, r, dir / ("rank" + std::to_string(r) + ".state"));
    }));
  }
  for (auto& r : ranks) {
    after += r.collect();
  }
  ASSERT_EQ(node.wait(60000), 0) << node_story(dir);
  EXPECT_NE(node_story(dir).find("every rank of every job attached"), std::string::npos)
      << node_story(dir);
  auto seen = parse_ids(before);
  for (const auto& [e, ids] : parse_ids(after)) {
    seen[e].insert(ids.begin(), ids.end());
  }
  expect_each_sample_once(seen);
  if (GetParam()) {
    EXPECT_NE(node_story(dir).find("dataset.shuffle = \"blocks\""), std::string::npos)
        << node_story(dir);
  }
}

INSTANTIATE_TEST_SUITE_P(Orders, ServingResume, ::testing::Bool());

}  // namespace
}  // namespace conveyor

// conveyor-node serving trainer processes, as they run it: the real node binary, clients in
// their own processes (forked), real Unix sockets and shared memory. Every wait is bounded by
// the client's own timeouts or a deadline on the node's exit; nothing sleeps.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <conveyor/client.hpp>

#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;
using ids_per_epoch = std::map<std::uint64_t, std::multiset<std::uint64_t>>;

constexpr int images = 24;
constexpr int epochs = 2;

std::string topology(const temp_dir& dir, int gpus, int jobs) {
  auto text = "gpus = " + std::to_string(gpus) + "\n[dataset]\npath = \"" +
              testing::make_image_folder(dir, images).string() +
              "\"\nformat = \"folder\"\n"
              "[pipeline]\nbatch_size = 4\nprefetch_batches = 2\npreprocessors = 2\n"
              "[trainer]\nepochs = " +
              std::to_string(epochs) + "\n[monitor]\ninterval_ms = 10000\n[serve]\nsocket = \"" +
              (dir / "node.sock").string() + "\"\njobs = " + std::to_string(jobs) +
              "\n[[transform]]\nop = \"decode\"\n"
              "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
              "[[transform]]\nop = \"flip\"\n"
              "[[transform]]\nop = \"normalize\"\n";
  auto path = dir / "node.toml";
  std::ofstream(path) << text;
  return path.string();
}

// A process started with fork/exec; its pid and, for a bounded wait, its pidfd.
struct process {
  pid_t pid = -1;
  int pidfd = -1;

  // Exit code (128 + signal when killed), or -1 when it did not end within `timeout_ms` (then
  // it is killed, so that a failed test leaves no process behind).
  int wait(int timeout_ms) {
    pollfd p{pidfd, POLLIN, 0};
    bool ended = ::poll(&p, 1, timeout_ms) == 1;
    if (!ended) {
      ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(pidfd);
    if (!ended) {
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

process watch(pid_t pid) {
  return {pid, static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
}

// The node, its stdout (the JSON line) into `dir`/node.out.
process start_node(const temp_dir& dir, const std::string& topology_file) {
  auto out = (dir / "node.out").string();
  auto err = (dir / "node.err").string();
  pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(CONVEYOR_NODE_BIN, CONVEYOR_NODE_BIN, "--topology", topology_file.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return watch(pid);
}

std::string node_output(const temp_dir& dir, const std::string& name) {
  std::ifstream in(dir / name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string node_json(const temp_dir& dir) {
  return node_output(dir, "node.out");
}

// What a node that did not end as expected said.
std::string node_story(const temp_dir& dir) {
  return node_output(dir, "node.out") + node_output(dir, "node.err");
}

std::string json_field(const std::string& json, const std::string& key) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"" + key + "\":(\\[[^\\]]*\\]|[^,}]+)")))
      << key << " missing in " << json;
  return m.empty() ? "" : m[1].str();
}

client_options patient() {
  client_options o;
  o.attach_timeout_s = 60;  // the node may still be starting
  o.next_timeout_s = 60;
  return o;
}

// "epoch id" lines of every sample a client consumed (released), from a forked child.
std::string consume_all(const std::string& socket, int rank, int job) {
  auto feed = client::attach(socket, rank, job, patient());
  if (!feed) {
    return "error " + feed.error().what() + "\n";
  }
  std::ostringstream out;
  for (auto e = feed->info().start_epoch; e < feed->epochs(); ++e) {
    auto range = feed->epoch(e);
    for (auto& b : range) {
      for (auto id : b.sample_ids()) {
        out << b.epoch() << " " << id << "\n";
      }
    }
    if (range.error()) {
      out << "error " << range.error()->what() << "\n";
    }
  }
  return out.str();
}

// Runs `work` in a child process; its text comes back through a pipe.
struct child {
  process proc;
  int read_end = -1;

  // Reads what the child wrote until it closed the pipe; then it must exit with `exit_code`.
  std::string collect(int exit_code = 0) {
    std::string text;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(read_end, buf, sizeof buf)) > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(read_end);
    EXPECT_EQ(proc.wait(60000), exit_code);
    return text;
  }
};

template <class Work>
child spawn_client(Work work) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto text = work(fds[1]);
    auto written = ::write(fds[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  return {watch(pid), fds[0]};
}

ids_per_epoch parse_ids(const std::string& text) {
  std::istringstream in(text);
  return testing::read_ids(in);
}

void expect_each_sample_once(const ids_per_epoch& seen) {
  for (std::uint64_t e = 0; e < epochs; ++e) {
    std::multiset<std::uint64_t> all;
    for (std::uint64_t id = 0; id < images; ++id) {
      all.insert(id);
    }
    EXPECT_EQ(seen.count(e) ? seen.at(e) : std::multiset<std::uint64_t>{}, all) << "epoch " << e;
  }
}

void merge_into(ids_per_epoch& into, const ids_per_epoch& from) {
  for (const auto& [e, ids] : from) {
    into[e].insert(ids.begin(), ids.end());
  }
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

// A job of 2 ranks takes 4 batches each (into epoch 1), saves each rank's state, and is gone
// with its node (SIGKILL). A new node with serve.resume starts once both ranks attached with
// their states: between them, they get exactly the samples no rank had.
TEST(Serving, ARestartedJobGoesOnFromItsRanksStatesExactly) {
  temp_dir dir;
  auto file = topology(dir, 2, 1);
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
  std::string text;
  {
    std::ifstream in(file);
    std::stringstream all;
    all << in.rdbuf();
    text = std::regex_replace(all.str(), std::regex("jobs = 1"), "jobs = 1\nresume = true");
  }
  std::ofstream(file) << text;
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
  EXPECT_NE(node_story(dir).find("every rank attached"), std::string::npos) << node_story(dir);
  auto seen = parse_ids(before);
  for (const auto& [e, ids] : parse_ids(after)) {
    seen[e].insert(ids.begin(), ids.end());
  }
  expect_each_sample_once(seen);
}

}  // namespace
}  // namespace conveyor

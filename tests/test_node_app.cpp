// conveyor-node as operators run it: the real binary, real files. A bad topology stops
// start-up with exit code 2 and a message naming file, line and key; a good one prints one
// JSON line that accounts for every sample.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

run_result run_node(const temp_dir& dir, const std::string& args) {
  auto out = dir / "stdout";
  auto err = dir / "stderr";
  auto cmd =
      std::string(CONVEYOR_NODE_BIN) + " " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::filesystem::path write_topology(const temp_dir& dir, const std::string& text) {
  auto path = dir / "node.toml";
  std::ofstream(path) << text;
  return path;
}

using testing::make_image_folder;

std::string topology_text(const std::filesystem::path& images, const std::string& extra = "") {
  return "gpus = 4\n" + extra + "[dataset]\npath = \"" + images.string() +
         "\"\nformat = \"folder\"\n"
         "[pipeline]\nbatch_size = 4\nprefetch_batches = 1\npreprocessors = 2\n"
         "[trainer]\nepochs = 2\n[monitor]\ninterval_ms = 50\n"
         "[[transform]]\nop = \"decode\"\n"
         "[[transform]]\nop = \"random_resized_crop\"\nsize = 32\n"
         "[[transform]]\nop = \"flip\"\n"
         "[[transform]]\nop = \"normalize\"\n";
}

std::uint64_t json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":([0-9.e+-]+)");
  EXPECT_TRUE(std::regex_search(json, m, re)) << key << " missing in " << json;
  return m.empty() ? 0 : static_cast<std::uint64_t>(std::stod(m[1].str()));
}

TEST(NodeApp, CleanRunWithFourFeedersAccountsForEverySample) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  auto r = run_node(dir, "--topology " + write_topology(dir, topology_text(images)).string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Exactly one line on stdout, and it is the JSON summary.
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(json_number(r.out, "samples"), 74u);
  EXPECT_EQ(json_number(r.out, "epochs"), 2u);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  EXPECT_EQ(json_number(r.out, "quarantined"), 0u);
  EXPECT_EQ(json_number(r.out, "gpus"), 4u);
  EXPECT_LE(json_number(r.out, "peak_in_flight"), json_number(r.out, "window_samples"));
  for (auto key : {"epoch_s", "samples_per_s", "stall_s", "stall_fraction", "peak_rss_mb"}) {
    EXPECT_NE(r.out.find(std::string("\"") + key + "\":"), std::string::npos) << key;
  }
  // A trainer with no step only waits: its stall fraction is not defined.
  EXPECT_NE(r.out.find("\"stall_fraction\":null"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"interrupted\":false"), std::string::npos) << r.out;
  // Where a sample's time went: read, each step by name, collate.
  EXPECT_NE(r.out.find("\"time_ms_per_sample\":{\"read\":"), std::string::npos) << r.out;
  for (auto step : {"decode", "random_resized_crop", "flip", "normalize", "collate"}) {
    EXPECT_NE(r.out.find(std::string("\"") + step + "\":"), std::string::npos) << step;
  }
}

// trainer.ids_file: every sample the trainers received, one "<epoch> <id>" line each: the
// audit shows each sample of each epoch exactly once over 4 GPUs.
TEST(NodeApp, TheIdsFileListsEverySampleOfEveryEpochOnce) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  auto ids = dir / "ids.txt";
  auto r = run_node(dir, "--topology " + write_topology(dir, topology_text(images)).string() +
                             " --set trainer.ids_file=" + ids.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(ids);
  std::map<std::uint64_t, std::multiset<std::uint64_t>> seen;
  std::uint64_t epoch = 0;
  std::uint64_t id = 0;
  while (in >> epoch >> id) {
    seen[epoch].insert(id);
  }
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [e, got] : seen) {
    std::multiset<std::uint64_t> want;
    for (std::uint64_t i = 0; i < 37; ++i) {
      want.insert(i);
    }
    EXPECT_EQ(got, want) << "epoch " << e;
  }
  auto bad = run_node(dir, "--topology " + write_topology(dir, topology_text(images)).string() +
                               " --set trainer.ids_file=" + (dir / "no-such-dir" / "ids").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("trainer.ids_file"), std::string::npos) << bad.err;
}

TEST(NodeApp, StallFractionIsANumberWhenTheTrainerSteps) {
  temp_dir dir;
  auto images = make_image_folder(dir, 9);
  auto file = write_topology(dir, topology_text(images));
  auto r = run_node(dir, "--topology " + file.string() + " --set trainer.step_ms=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\"stall_fraction\":[0-9]"))) << r.out;
}

// A node started as a child process, its stdout and stderr on pipes. Every wait on it is
// bounded: a node that does not stop fails the test instead of hanging it.
class node_process {
 public:
  explicit node_process(std::vector<std::string> args) {
    int out[2];
    int err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(err[1], 2);
      std::vector<char*> argv{const_cast<char*>(CONVEYOR_NODE_BIN)};
      for (auto& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~node_process() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  /// Reads stderr until `needle` appears; false at EOF or after `limit`.
  bool wait_for_log(const std::string& needle, std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (err_text_.find(needle) == std::string::npos) {
      if (!read_some(err_, err_text_, deadline)) {
        return false;
      }
    }
    return true;
  }
  /// Reads stdout to its end, then reaps the process: its exit code, or -1 (killed, or still
  /// running after `limit`).
  int finish(std::chrono::seconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (read_some(out_, out_text_, deadline)) {
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return -1;
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  void signal(int sig) const { kill(pid_, sig); }
  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }

 private:
  // One read from `fd` into `text`; false at EOF or past the deadline.
  static bool read_some(int fd, std::string& text, std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      return false;
    }
    char buf[4096];
    auto n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      return false;
    }
    text.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  std::string out_text_;
  std::string err_text_;
};

// Ctrl-C or SIGTERM in the middle of a run that would take hours: the node stops, prints its
// JSON line marked interrupted, and exits 128 + the signal.
void expect_prompt_stop(int sig, int code) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  auto file = write_topology(dir, topology_text(images));
  node_process node({"--topology", file.string(), "--set", "trainer.epochs=1000", "--set",
                     "trainer.step_ms=5000"});
  ASSERT_TRUE(node.wait_for_log("policy", std::chrono::seconds(120))) << node.err();
  node.signal(sig);
  // 1000 epochs at 5 s per batch would take days: ending at all means the signal stopped it.
  ASSERT_EQ(node.finish(std::chrono::seconds(120)), code) << node.err();
  EXPECT_EQ(std::count(node.out().begin(), node.out().end(), '\n'), 1) << node.out();
  EXPECT_NE(node.out().find("\"interrupted\":true"), std::string::npos) << node.out();
  EXPECT_LT(json_number(node.out(), "samples"), 37u * 1000u);
  EXPECT_EQ(json_number(node.out(), "duplicates"), 0u);
  // Epochs that never ended do not count in the mean epoch time.
  EXPECT_TRUE(std::regex_search(node.out(), std::regex("\"epoch_s\":[0-9]"))) << node.out();
}

TEST(NodeApp, CtrlCStopsTheRunPromptlyWithExitCode130) {
  expect_prompt_stop(SIGINT, 130);
}

TEST(NodeApp, SigtermStopsTheRunPromptlyWithExitCode143) {
  expect_prompt_stop(SIGTERM, 143);
}

TEST(NodeApp, SetOverridesTopologyKeys) {
  temp_dir dir;
  auto images = make_image_folder(dir, 9);
  auto file = write_topology(dir, topology_text(images));
  auto r = run_node(dir, "--topology " + file.string() +
                             " --set trainer.epochs=1 --set gpus=1 --set pipeline.batch_size=2"
                             " --set batching.policy=latency_aware");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 9u);
  EXPECT_EQ(json_number(r.out, "batches"), 5u);
  EXPECT_EQ(json_number(r.out, "batch_size"), 2u);
  EXPECT_NE(r.out.find("\"policy\":\"latency_aware\""), std::string::npos) << r.out;
  EXPECT_EQ(json_number(r.out, "lost") + json_number(r.out, "duplicates"), 0u);
}

// A drill: preprocessors and readers crash, some reads fail; every sample still arrives once.
TEST(NodeApp, FaultDrillAccountsForEverySampleAndLogsRestarts) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  auto file = write_topology(dir, topology_text(images));
  auto report = dir / "quarantine.tsv";
  auto r = run_node(dir, "--topology " + file.string() +
                             " --set faults.crash_preprocessor=0.1 --set faults.crash_reader=0.05"
                             " --set faults.read_error=0.05 --set faults.seed=4"
                             " --set supervision.max_restarts=1000 --set "
                             "supervision.backoff_min_ms=0 --set supervision.backoff_max_ms=1"
                             " --set supervision.max_sample_retries=50"
                             " --set supervision.quarantine_report=\"" +
                             report.string() + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 74u);
  EXPECT_EQ(json_number(r.out, "lost") + json_number(r.out, "duplicates"), 0u);
  EXPECT_EQ(json_number(r.out, "quarantined"), 0u);
  EXPECT_GT(json_number(r.out, "restarts"), 0u);
  EXPECT_GT(json_number(r.out, "retries"), 0u);
  EXPECT_NE(r.err.find("restarting"), std::string::npos);
  EXPECT_EQ(slurp(report), "epoch\tsample\tkey\treason\n");  // written, and empty
}

TEST(NodeApp, SpentRestartBudgetStopsTheNodeWithAClearError) {
  temp_dir dir;
  auto images = make_image_folder(dir, 9);
  auto file = write_topology(dir, topology_text(images));
  auto r =
      run_node(dir, "--topology " + file.string() +
                        " --set faults.crash_preprocessor=1.0 --set supervision.max_restarts=2"
                        " --set supervision.backoff_min_ms=0 --set supervision.backoff_max_ms=1");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("preprocessor supervisor gave up"), std::string::npos) << r.err;
}

struct bad_case {
  std::string name;
  std::string edit_from;  ///< text of the good topology to replace ("" = prepend `edit_to`)
  std::string edit_to;
  std::string needle;  ///< must appear in the error
};

class NodeAppBadTopology : public ::testing::TestWithParam<bad_case> {};

TEST_P(NodeAppBadTopology, StopsWithExitCodeTwoAndNamesTheKey) {
  temp_dir dir;
  auto images = make_image_folder(dir, 2);
  auto text = topology_text(images);
  const auto& c = GetParam();
  if (c.edit_from.empty()) {
    text = c.edit_to + text;
  } else {
    auto at = text.find(c.edit_from);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, c.edit_from.size(), c.edit_to);
  }
  auto r = run_node(dir, "--topology " + write_topology(dir, text).string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "no JSON line for a run that did not start";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NodeAppBadTopology,
    ::testing::Values(bad_case{"missing_key", "path = ", "paths = ", "dataset.path"},
                      bad_case{"wrong_type", "batch_size = 4", "batch_size = \"4\"",
                               "node.toml:6:14: pipeline.batch_size: expected an integer"},
                      bad_case{"unknown_op", "op = \"flip\"", "op = \"rotate\"", "rotate"},
                      bad_case{"negative_batch", "batch_size = 4", "batch_size = -4",
                               "pipeline.batch_size: must be >= 1 (got -4)"},
                      bad_case{"unknown_key", "prefetch_batches = 1", "prefetch_batchez = 1",
                               "prefetch_batchez"},
                      bad_case{"missing_dataset", "images\"", "nowhere\"", "nowhere"},
                      bad_case{"unwritable_quarantine_report", "[dataset]",
                               "[supervision]\nquarantine_report = \"/no/q.tsv\"\n[dataset]",
                               "supervision.quarantine_report"}),
    [](const ::testing::TestParamInfo<bad_case>& param_info) { return param_info.param.name; });

TEST(NodeApp, MissingTopologyFileAndBadCommandLineExitTwo) {
  temp_dir dir;
  auto missing = run_node(dir, "--topology " + (dir / "none.toml").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.toml"), std::string::npos) << missing.err;
  EXPECT_EQ(run_node(dir, "--bogus-flag").exit_code, 2);
  EXPECT_EQ(run_node(dir, "").exit_code, 2) << "--topology is required";
}

}  // namespace
}  // namespace conveyor

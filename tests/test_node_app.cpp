// conveyor-node as operators run it: the real binary, real files. A bad topology stops
// start-up with exit code 2 and a message naming file, line and key; a good one prints one
// JSON line that accounts for every sample.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

using testing::json_number;
using testing::node_process;
using testing::run_node;
using testing::slurp;
using testing::write_topology;

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
  // Where a sample's time went: read, each step by name, collate. The final normalize runs as
  // the feeders write the batch: the chain ends with to_uint8, and collate normalises.
  EXPECT_NE(r.out.find("\"time_ms_per_sample\":{\"read\":"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"sample_ms\":{\"samples\":"), std::string::npos) << r.out;
  for (auto step : {"decode", "random_resized_crop", "flip", "to_uint8", "collate"}) {
    EXPECT_NE(r.out.find(std::string("\"") + step + "\":"), std::string::npos) << step;
  }
  EXPECT_EQ(r.out.find("\"normalize\":"), std::string::npos) << r.out;
}

// OpenCV's imgcodecs (and the GIS, DICOM and PDF libraries behind it) is loaded only when an
// image that is neither JPEG nor PNG is decoded: a node that decodes JPEGs never maps it (the
// dynamic loader names every library it loads, dlopen's too, under LD_DEBUG=files).
TEST(NodeApp, OpenCvsImageCodecsAreLoadedOnlyForImagesThatAreNeitherJpegNorPng) {
  temp_dir dir;
  auto images = make_image_folder(dir, 9);
  const std::string node = std::string("LD_DEBUG=files ") + CONVEYOR_NODE_BIN;
  const auto args = "--topology " + write_topology(dir, topology_text(images)).string();
  auto jpegs = testing::run_app(node, dir, args);
  ASSERT_EQ(jpegs.exit_code, 0) << jpegs.err;
  EXPECT_NE(jpegs.err.find("file=libcaf_core"), std::string::npos) << "LD_DEBUG said nothing";
  EXPECT_EQ(jpegs.err.find("libopencv_imgcodecs"), std::string::npos);
  // A BMP among them: decoded through imgcodecs, loaded for it.
  cv::Mat blue(24, 32, CV_8UC3, cv::Scalar(255, 0, 0));
  std::vector<std::uint8_t> bmp;
  ASSERT_TRUE(cv::imencode(".bmp", blue, bmp));
  testing::write_file(images / "class_0" / "blue.bmp", bmp);
  auto mixed = testing::run_app(node, dir, args);
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("libopencv_imgcodecs"), std::string::npos);
  EXPECT_EQ(json_number(mixed.out, "samples"), 20u);
  EXPECT_EQ(json_number(mixed.out, "quarantined"), 0u);
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
  auto seen = testing::read_ids_file(ids);
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
  const auto out = node.out();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
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
                               "supervision.quarantine_report"},
                      // 4 feeders of batch 4: the window must hold 16 samples at least
                      bad_case{"window_below_a_batch_per_feeder", "prefetch_batches = 1",
                               "prefetch_batches = 1\nwindow_samples = 15",
                               "pipeline.window_samples = 15 cannot hold a batch for each of 4 "
                               "feeders (pipeline.batch_size 4 x 4 = 16 samples at least)"}),
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

// The node's live diagnosis (actors/diagnosis.hpp) as operators see it: a node whose trainer
// takes no time, and whose preprocessing is the work, is prep-bound (the trainers always wait, the
// preprocessors are the busy part); one whose trainer is slow is trainer-bound; the JSON line names
// the dominant class and the share of each, and the log says when the class changes.
#include <gtest/gtest.h>

#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::run_node;
using testing::temp_dir;

// `epochs` epochs over `folder` with a trainer step of `step_ms`, the diagnosis every 10 ms.
std::string run_with_step(const temp_dir& dir, const std::filesystem::path& folder, int step_ms,
                          int epochs, std::string* log) {
  auto file = testing::write_topology(
      dir, "gpus = 1\n[dataset]\npath = \"" + folder.string() +
               "\"\nformat = \"folder\"\n[pipeline]\nbatch_size = 4\npreprocessors = 1\n"
               "[trainer]\nepochs = " +
               std::to_string(epochs) + "\nstep_ms = " + std::to_string(step_ms) +
               "\n[monitor]\ninterval_ms = 10\n"
               "[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 64\n"
               "[[transform]]\nop = \"normalize\"\n");
  auto r = run_node(dir, "--topology " + file.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  *log = r.err;
  return r.out;
}

// Images large enough that decoding them is the work: with the small ones of
// make_image_folder (64 x 48 px, decoded in 0.07 ms), the feeders' collate and normalize of the
// 64 px crops (0.36 ms a sample on some machines) was the slower part and the node rightly
// said window-bound.
std::filesystem::path large_image_folder(const temp_dir& dir, int images) {
  auto root = dir / "large";
  for (int i = 0; i < images; ++i) {
    auto cls = root / ("class_" + std::to_string(i % 2));
    std::filesystem::create_directories(cls);
    testing::write_file(cls / ("img_" + std::to_string(i) + ".jpg"),
                        testing::make_jpeg(640, 480, static_cast<std::uint64_t>(i)));
  }
  return root;
}

TEST(NodeDiagnosis, ATrainerThatNeverWorksLeavesTheNodePrepBound) {
  temp_dir dir;
  auto folder = large_image_folder(dir, 40);
  std::string log;
  auto json = run_with_step(dir, folder, 0, 10, &log);  // ~1 s of decoding
  EXPECT_NE(json.find("\"bottleneck\":\"prep\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"bottleneck_shares\":{\"trainer\":"), std::string::npos) << json;
  EXPECT_NE(log.find("[diagnosis] now prep-bound"), std::string::npos) << log;
}

TEST(NodeDiagnosis, ASlowTrainerLeavesTheNodeTrainerBound) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 24);
  std::string log;
  auto json = run_with_step(dir, folder, 100, 2, &log);  // 12 steps of 0.1 s
  EXPECT_NE(json.find("\"bottleneck\":\"trainer\""), std::string::npos) << json;
  EXPECT_GT(testing::json_number(json, "trainer_samples_per_s"), 0u) << json;
  EXPECT_NE(log.find("[diagnosis] now trainer-bound"), std::string::npos) << log;
}

}  // namespace
}  // namespace conveyor

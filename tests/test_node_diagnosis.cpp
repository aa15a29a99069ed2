// The node's live diagnosis (actors/diagnosis.hpp) as operators see it: a node whose trainer
// takes no time is prep-bound (the trainers always wait, the preprocessors are the busy part);
// one whose trainer is slow is trainer-bound; the JSON line names the dominant class and the
// share of each, and the log says when the class changes.
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

TEST(NodeDiagnosis, ATrainerThatNeverWorksLeavesTheNodePrepBound) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 40);
  std::string log;
  auto json = run_with_step(dir, folder, 0, 40, &log);  // ~0.2 s of work
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

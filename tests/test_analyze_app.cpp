// conveyor-analyze end to end, as its users run it: on a small generated set with the
// default topology, its JSON document has every field, its chart is a PNG, and a bad topology
// or command line exits 2 naming what is wrong.
#include <gtest/gtest.h>

#include "support/app_process.hpp"

namespace conveyor {
namespace {

using testing::run_app;
using testing::temp_dir;

const std::string topology = CONVEYOR_SOURCE_DIR "/config/default.toml";

std::string analyze(const temp_dir& dir, const std::string& folder, const std::string& more,
                    int* exit_code) {
  auto r = run_app(CONVEYOR_ANALYZE_BIN, dir,
                   "--topology " + topology + " --set dataset.path=\\\"" + folder +
                       "\\\" --set dataset.format=\\\"folder\\\" --samples 40 --fetch-samples 40 " +
                       more);
  *exit_code = r.exit_code;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(AnalyzeApp, TheJsonDocumentHasEveryField) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 40);
  int rc = 0;
  auto json =
      analyze(dir, folder.string(),
              "--set trainer.step_ms=50 --json --plot " + (dir / "chart.png").string(), &rc);
  ASSERT_EQ(rc, 0);
  for (const char* key : {"\"topology\":",
                          "\"dataset\":{\"path\":",
                          "\"samples\":40",
                          "\"epoch_samples\":40",
                          "\"mean_sample_kb\":",
                          "\"ingestion\":{\"samples_per_s\":",
                          "\"source\":",
                          "\"gpus\":",
                          "\"batch_size\":64",
                          "\"step_ms\":50",
                          "\"prep\":{\"preprocessors\":",
                          "\"cores\":",
                          "\"scaling\":[{\"workers\":1,\"samples_per_s\":",
                          "\"sample_ms\":{\"mean\":",
                          "\"p50\":",
                          "\"p90\":",
                          "\"p99\":",
                          "\"max\":",
                          "\"steps\":{\"decode\":",
                          "\"scaled_decode\":{",
                          "\"on_samples_per_s\":",
                          "\"off_samples_per_s\":",
                          "\"fetch\":{\"readers\":",
                          "\"cold_samples_per_s\":",
                          "\"cold_mb_per_s\":",
                          "\"warm_samples_per_s\":",
                          "\"warm_mb_per_s\":",
                          "\"files_dropped_from_page_cache\":",
                          "\"cached_fraction\":",
                          "\"cache_note\":",
                          "\"verdict\":{\"first_epoch\":{\"bottleneck\":",
                          "\"later_epochs\":",
                          "\"stall_fraction\":",
                          "\"recommendation\":",
                          "\"what_if\":{\"preprocessors\":[",
                          "\"extrapolated\":true",
                          "\"cache_fraction\":[{\"fraction\":0.0,",
                          "\"batch_size\":[{\"batch_size\":32,",
                          "\"scaled_decode\":[{\"scaled\":true,"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " missing in " << json;
  }
  EXPECT_NE(json.find("\"files\":40"), std::string::npos) << json;
  auto png = testing::read_file(dir / "chart.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(std::string(png.begin() + 1, png.begin() + 4), "PNG");
}

TEST(AnalyzeApp, TheTableTellsTheVerdictFirst) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 40);
  int rc = 0;
  auto table = analyze(dir, folder.string(), "--set trainer.step_ms=0", &rc);
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(table.rfind("verdict: ", 0), 0u) << table;
  EXPECT_NE(table.find("recommendation: "), std::string::npos) << table;
  EXPECT_NE(table.find("what if: preprocessors"), std::string::npos) << table;
  // A trainer that takes no time: no stall, no batch what-if.
  EXPECT_NE(table.find("none: trainer.step_ms = 0"), std::string::npos) << table;
  EXPECT_EQ(table.find("what if: batch size"), std::string::npos) << table;
}

TEST(AnalyzeApp, BadInputExitsTwoNamingIt) {
  temp_dir dir;
  auto bad_key =
      run_app(CONVEYOR_ANALYZE_BIN, dir, "--topology " + topology + " --set pipeline.batch_size=0");
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_NE(bad_key.err.find("pipeline.batch_size"), std::string::npos) << bad_key.err;
  auto no_data = run_app(CONVEYOR_ANALYZE_BIN, dir,
                         "--topology " + topology + " --set dataset.path=\\\"/no/such/set\\\"");
  EXPECT_EQ(no_data.exit_code, 2);
  EXPECT_NE(no_data.err.find("dataset.path"), std::string::npos) << no_data.err;
  auto bad_flag = run_app(CONVEYOR_ANALYZE_BIN, dir, "--topology " + topology + " --samples 0");
  EXPECT_EQ(bad_flag.exit_code, 2);
}

}  // namespace
}  // namespace conveyor

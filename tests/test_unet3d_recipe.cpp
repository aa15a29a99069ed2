// The UNet3D recipe (config/examples/unet3d-kits19.toml) through the embedding API, on small
// KiTS19-like cases of the generator (patch 32 instead of 128, so that the cases stay small):
// both layouts users have, MLPerf's directory of case_XXXXX_x.npy / _y.npy and WebDataset tars
// made with Python's tarfile, give every case once per epoch and the same voxels; bad cases are
// quarantined naming the case and the reason while the others go on. (Exactness against the
// reference's transforms: tests/python/test_unet3d_exact.py.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "conveyor/pipeline.hpp"
#include "core/codecs/npy_writer.hpp"
#include "core/codecs/synthetic_volumes.hpp"
#include "support/python_tars.hpp"

namespace conveyor {
namespace {

constexpr int cases = 6;

synthetic_volume_options small_cases(std::uint64_t count) {
  synthetic_volume_options o;
  o.count = count;
  o.min_extent = 40;
  o.max_side = 56;
  o.max_depth = 72;
  o.threads = 1;
  return o;
}

/// The recipe with a 32^3 patch, reading `dir` as `format`.
std::string recipe_text() {
  std::ifstream in(std::string(CONVEYOR_SOURCE_DIR) + "/config/examples/unet3d-kits19.toml");
  std::stringstream text;
  text << in.rdbuf();
  auto s = text.str();
  const std::string size = "size = [128, 128, 128]";
  auto at = s.find(size);
  EXPECT_NE(at, std::string::npos) << "the recipe's crop size";
  return s.replace(at, size.size(), "size = [32, 32, 32]");
}

/// Per sample id: its image and label bytes, from one epoch of the recipe on `dir`.
struct epoch_result {
  std::map<std::uint64_t, std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>>> samples;
  pipeline_report report;
};

epoch_result run_epoch(const std::filesystem::path& dir, const std::string& format,
                       const std::string& map_parts = "[\"x.npy\", \"y.npy\"]") {
  auto p = pipeline::from_toml(
      recipe_text(), {"dataset.path=" + dir.string(), "dataset.format=" + format, "gpus=1",
                      "pipeline.preprocessors=2", "trainer.epochs=1",
                      "dataset.map_parts=" + map_parts});
  EXPECT_TRUE(p) << (p ? "" : p.error().what());
  epoch_result out;
  if (!p) {
    return out;
  }
  for (auto& b : p->epoch(0, 0)) {
    auto image = b.field("image");
    auto label = b.field("label");
    EXPECT_TRUE(image && label);
    EXPECT_EQ(image->type, dtype::float32);
    EXPECT_EQ(label->type, dtype::uint8);
    EXPECT_EQ(image->rank, 5);
    EXPECT_EQ(image->shape[2], 32);
    const auto n = b.sample_ids().size();
    const auto image_bytes = image->byte_count() / n;
    const auto label_bytes = label->byte_count() / n;
    for (std::size_t i = 0; i < n; ++i) {
      const auto* ip = static_cast<const std::uint8_t*>(image->data) + i * image_bytes;
      const auto* lp = static_cast<const std::uint8_t*>(label->data) + i * label_bytes;
      EXPECT_TRUE(out.samples
                      .emplace(b.sample_ids()[i],
                               std::pair{std::vector<std::uint8_t>(ip, ip + image_bytes),
                                         std::vector<std::uint8_t>(lp, lp + label_bytes)})
                      .second)
          << "sample " << b.sample_ids()[i] << " twice";
      EXPECT_LE(*std::max_element(lp, lp + label_bytes), 2) << "a label value of no class";
    }
  }
  out.report = p->report();
  return out;
}

TEST(Unet3dRecipe, BothLayoutsGiveEveryCaseOnceWithTheSameVoxels) {
  testing::temp_dir dir;
  auto made = generate_synthetic_volumes(dir / "mlperf", small_cases(cases));
  ASSERT_TRUE(made) << made.error().what();
  // The same cases as WebDataset members case_XXXXX.x.npy / .y.npy, in key order.
  std::vector<std::pair<std::string, std::filesystem::path>> members;
  for (int c = 0; c < cases; ++c) {
    char key[16];
    std::snprintf(key, sizeof key, "case_%05d", c);
    for (const char* part : {"x", "y"}) {
      members.emplace_back(std::string(key) + "." + part + ".npy",
                           dir / "mlperf" / (std::string(key) + "_" + part + ".npy"));
    }
  }
  std::filesystem::create_directories(dir / "tars");
  testing::pack_with_python(dir, dir / "tars" / "kits-000000.tar", members);

  auto from_dir = run_epoch(dir / "mlperf", "npy_pairs");
  auto from_tars = run_epoch(dir / "tars", "webdataset");
  EXPECT_EQ(from_dir.samples.size(), static_cast<std::size_t>(cases));
  EXPECT_EQ(from_dir.report.quarantined, 0u);
  EXPECT_EQ(from_tars.report.quarantined, 0u);
  // Sample ids and draws depend on the key order only: the same crops, flips and noise.
  EXPECT_TRUE(from_dir.samples == from_tars.samples) << "the layouts' samples differ";
}

TEST(Unet3dRecipe, AMemberThatLooksLikeADescriptorIsDataNeverAnotherFile) {
  // Two cases whose x.npy members are forged file slice descriptors, read with
  // dataset.map_parts off (with it on, the reader makes its own descriptors of the members): one
  // names a case's volume outside the dataset, one a FIFO (opening it would block the worker,
  // then every worker the sample is reissued to). Both are data: not .npy bytes.
  testing::temp_dir dir;
  auto made = generate_synthetic_volumes(dir / "mlperf", small_cases(3));
  ASSERT_TRUE(made) << made.error().what();
  std::filesystem::create_directories(dir / "outside");
  ASSERT_EQ(::mkfifo((dir / "outside" / "fifo").c_str(), 0600), 0);
  const auto outside_volume = dir / "mlperf" / "case_00000_x.npy";
  std::vector<std::pair<std::string, std::filesystem::path>> members;
  for (int c = 0; c < 3; ++c) {
    const auto key = "case_0000" + std::to_string(c);
    members.emplace_back(key + ".x.npy", dir / "mlperf" / (key + "_x.npy"));
    members.emplace_back(key + ".y.npy", dir / "mlperf" / (key + "_y.npy"));
  }
  for (const auto& [key, target] :
       {std::pair<std::string, std::filesystem::path>{"forged_file", outside_volume},
        {"forged_fifo", dir / "outside" / "fifo"}}) {
    testing::write_file(dir / (key + ".bytes"), testing::forged_slice_of(target));
    members.emplace_back(key + ".x.npy", dir / (key + ".bytes"));
    members.emplace_back(key + ".y.npy", dir / "mlperf" / "case_00000_y.npy");
  }
  std::filesystem::create_directories(dir / "tars");
  testing::pack_with_python(dir, dir / "tars" / "kits-000000.tar", members);

  auto run = run_epoch(dir / "tars", "webdataset", "[]");
  EXPECT_EQ(run.samples.size(), 3u) << "the good cases go on";
  EXPECT_EQ(run.report.quarantined, 2u);
  testing::expect_quarantined(run.report.quarantined_samples, {{"forged_file", "not a .npy file"},
                                                               {"forged_fifo", "not a .npy file"}});
}

// A case whose parts are `image` and `label`, written into `dir` as case `key`.
void write_case(const std::filesystem::path& dir, const std::string& key, const host_array& image,
                const host_array& label) {
  ASSERT_TRUE(write_npy(dir / (key + "_x.npy"), image));
  ASSERT_TRUE(write_npy(dir / (key + "_y.npy"), label));
}

TEST(Unet3dRecipe, BadCasesAreQuarantinedNamingTheCaseAndTheReason) {
  testing::temp_dir dir;
  const auto opts = small_cases(3);
  auto made = generate_synthetic_volumes(dir / "set", opts);
  ASSERT_TRUE(made) << made.error().what();
  auto [image, label] = make_synthetic_case(opts, 5);
  // Shapes differ: the label of another case.
  auto [other_image, other_label] = make_synthetic_case(opts, 6);
  ASSERT_NE(image.shape, other_label.shape);
  write_case(dir / "set", "bad_shape", image, other_label);
  // A class above 2.
  auto three = label;
  three.data<std::uint8_t>()[three.element_count() / 2] = 3;
  write_case(dir / "set", "bad_class", image, three);
  // NaN and infinity in the image.
  auto nan = image;
  nan.data<float>()[nan.element_count() / 3] = std::numeric_limits<float>::quiet_NaN();
  write_case(dir / "set", "bad_nan", nan, label);
  auto inf = image;
  inf.data<float>()[7] = -std::numeric_limits<float>::infinity();
  write_case(dir / "set", "bad_inf", inf, label);
  // A truncated image file.
  write_case(dir / "set", "bad_truncated", image, label);
  std::filesystem::resize_file(dir / "set" / "bad_truncated_x.npy",
                               std::filesystem::file_size(dir / "set" / "bad_truncated_x.npy") / 2);
  // Empty volumes whose headers (128 bytes each) say 1x0x65536x65536: a slab of them is 16 GiB.
  write_case(dir / "set", "bad_empty", host_array::zeros(dtype::float32, {1, 0, 65536, 65536}),
             host_array::zeros(dtype::uint8, {1, 0, 65536, 65536}));

  auto run = run_epoch(dir / "set", "npy_pairs");
  EXPECT_EQ(run.samples.size(), 3u) << "the good cases go on";
  EXPECT_EQ(run.report.quarantined, 6u);
  const std::map<std::string, std::string> reasons{{"bad_shape", "shapes differ"},
                                                   {"bad_class", "class 3"},
                                                   {"bad_nan", "NaN"},
                                                   {"bad_inf", "infinity"},
                                                   {"bad_truncated", "bytes follow"},
                                                   {"bad_empty", "an empty volume"}};
  testing::expect_quarantined(run.report.quarantined_samples, reasons);
}

}  // namespace
}  // namespace conveyor

// normalize at collate: the chain's final normalize on the CPU runs as the feeder writes the
// uint8 samples into the batch (core/delivery/host_batch.hpp write_normalized_samples). The
// floats are the very bits the normalize step gives, for the function and for a pipeline that
// delivers batches to a trainer.
#include <gtest/gtest.h>

#include <conveyor/pipeline.hpp>
#include <cstring>
#include <fstream>
#include <map>

#include "core/delivery/host_batch.hpp"
#include "core/transforms/transform_chain.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

normalize_spec custom_normalize() {
  normalize_spec n;
  n.mean = {0.3, 0.5, 0.7};
  n.stddev = {0.2, 0.25, 0.3};
  return n;
}

/// The chain's output for `jpeg`: center_crop 20 x 16, then `last`.
host_tensor prepared(const std::vector<std::uint8_t>& jpeg, const transform_spec& last) {
  center_crop_spec crop;
  crop.width = 16;
  crop.height = 20;
  auto chain = transform_chain::build({decode_spec{}, crop, last});
  EXPECT_TRUE(chain) << chain.error().what();
  sample_state s;
  s.encoded = jpeg;
  auto ok = chain->run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  return std::move(s.output);
}

bool same_bits(const void* a, const host_tensor& b) {
  return std::memcmp(a, b.bytes.data(), b.bytes.size()) == 0;
}

TEST(CollateNormalize, TheBatchHoldsTheNormalizeStepsBits) {
  batch_plan plan;
  std::vector<host_tensor> expected;
  for (int i = 0; i < 5; ++i) {
    auto jpeg = testing::make_jpeg(40 + i, 30 + 2 * i, static_cast<std::uint64_t>(i));
    auto sample = std::make_shared<prepared_sample>();
    sample->tensor = prepared(jpeg, to_uint8_spec{});
    plan.samples.push_back(sample);
    expected.push_back(prepared(jpeg, custom_normalize()));
  }
  const std::size_t sample_bytes = expected.front().bytes.size();
  std::vector<float> batch(plan.samples.size() * sample_bytes / sizeof(float));
  write_normalized_samples(plan, normalize_table(coefficients_of(custom_normalize())),
                           reinterpret_cast<std::uint8_t*>(batch.data()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(same_bits(reinterpret_cast<const std::uint8_t*>(batch.data()) + i * sample_bytes,
                          expected[i]))
        << "sample " << i;
  }
}

TEST(CollateNormalize, APipelineDeliversTheNormalizeStepsBits) {
  temp_dir dir;
  std::map<std::string, std::vector<std::uint8_t>> files;
  for (int i = 0; i < 11; ++i) {
    auto key = "c" + std::to_string(i % 2) + "/i" + std::to_string(i) + ".jpg";
    files[key] = testing::make_jpeg(30 + i, 28 + i % 5, static_cast<std::uint64_t>(i));
    std::filesystem::create_directories((dir / "images" / key).parent_path());
    testing::write_file(dir / "images" / key, files[key]);
  }
  auto topology = dir / "node.toml";
  std::ofstream(topology) << "[dataset]\npath = \"" << (dir / "images").string()
                          << "\"\nformat = \"folder\"\n"
                             "[pipeline]\nbatch_size = 4\n[trainer]\nepochs = 1\n"
                             "[[transform]]\nop = \"decode\"\n"
                             "[[transform]]\nop = \"center_crop\"\nsize = [20, 16]\n"
                             "[[transform]]\nop = \"normalize\"\n"
                             "mean = [0.3, 0.5, 0.7]\nstd = [0.2, 0.25, 0.3]\n";
  auto p = pipeline::open(topology);
  ASSERT_TRUE(p) << p.error().what();
  std::size_t checked = 0;
  for (auto& b : p->epoch(0, 0)) {
    auto t = b.tensor();
    ASSERT_EQ(t.type, dtype::float32);
    const std::size_t sample_bytes = t.bytes() / b.size();
    for (std::size_t i = 0; i < b.size(); ++i) {
      auto want = prepared(files.at(b.keys()[i]), custom_normalize());
      ASSERT_EQ(want.bytes.size(), sample_bytes);
      EXPECT_TRUE(same_bits(static_cast<const std::uint8_t*>(t.data) + i * sample_bytes, want))
          << b.keys()[i];
      ++checked;
    }
  }
  EXPECT_EQ(checked, files.size());
}

}  // namespace
}  // namespace conveyor

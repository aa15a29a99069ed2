// normalize at collate: the chain's final normalize on the CPU runs as the feeder writes the
// uint8 samples into the batch (core/delivery/batch_blob.hpp, collate_normalize). The
// floats are the very bits the normalize step gives, for the function and for a pipeline that
// delivers batches to a trainer.
#include <gtest/gtest.h>

#include <array>
#include <conveyor/pipeline.hpp>
#include <cstring>
#include <fstream>
#include <map>

#include "core/delivery/batch_blob.hpp"
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

transform_chain chain_ending(const transform_spec& last) {
  center_crop_spec crop;
  crop.width = 16;
  crop.height = 20;
  auto chain = transform_chain::build({decode_spec{}, crop, last});
  EXPECT_TRUE(chain) << chain.error().what();
  return *chain;
}

/// The chain's fields for `jpeg`: center_crop 20 x 16, then `last` (label, image).
std::vector<host_array> prepared(const std::vector<std::uint8_t>& jpeg,
                                 const transform_spec& last) {
  auto chain = chain_ending(last);
  sample_state s;
  s.key = "a.jpg";
  s.encoded = jpeg;
  chain.start(s, 0);
  auto ok = chain.run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  auto fields = chain.take_fields(s);
  EXPECT_TRUE(fields) << fields.error().what();
  return std::move(*fields);
}

bool same_bits(const void* a, const host_array& b) {
  return std::memcmp(a, b.bytes.data(), b.bytes.size()) == 0;
}

TEST(CollateNormalize, TheBatchHoldsTheNormalizeStepsBits) {
  batch_plan plan;
  std::vector<host_array> expected;
  for (int i = 0; i < 5; ++i) {
    auto jpeg = testing::make_jpeg(40 + i, 30 + 2 * i, static_cast<std::uint64_t>(i));
    auto sample = std::make_shared<prepared_sample>();
    sample->fields = prepared(jpeg, to_uint8_spec{});
    plan.samples.push_back(sample);
    expected.push_back(std::move(prepared(jpeg, custom_normalize())[1]));
  }
  // The batch's fields: the image float32, as collate normalises it.
  auto schema = chain_ending(to_uint8_spec{}).schema();
  schema.fields[1].type.type = dtype::float32;
  auto layout = blob_layout::make(schema, plan.samples.size());
  ASSERT_TRUE(layout) << layout.error().what();
  std::vector<std::uint8_t> buffer(layout->bytes);
  const collate_normalize n{1, normalize_table(coefficients_of(custom_normalize()))};
  auto fields = collate_batch(plan, schema, *layout, buffer.data(), &n);
  const std::size_t sample_bytes = expected.front().bytes.size();
  ASSERT_EQ(fields[1].bytes(), sample_bytes * plan.samples.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(same_bits(buffer.data() + fields[1].values + i * sample_bytes, expected[i]))
        << "sample " << i;
  }
}

TEST(CollateNormalize, APaddedImageIsNormalizedRowByRowAndFilledWithTheFloatValue) {
  // Two CHW uint8 images of different sizes, padded to the batch's largest (rounded to 4) and
  // normalised as they are written: every pixel is the table's float, every pad the value.
  const normalize_table table(coefficients_of(custom_normalize()));
  batch_plan plan;
  const std::array<std::array<int, 2>, 2> sizes{{{3, 5}, {6, 2}}};
  for (const auto& hw : sizes) {
    auto a = host_array::uninitialized(dtype::uint8, {3, hw[0], hw[1]});
    for (std::size_t i = 0; i < a.bytes.size(); ++i) {
      a.bytes[i] = static_cast<std::uint8_t>(i * 37 + hw[0]);
    }
    auto sample = std::make_shared<prepared_sample>();
    sample->fields.push_back(std::move(a));
    plan.samples.push_back(sample);
  }
  field_spec image;
  image.name = "image";
  image.type.type = dtype::float32;
  image.type.rank = 3;
  image.type.shape = {3, varies, varies};
  image.collate.mode = collate_mode::pad;
  image.collate.multiple = 4;
  image.collate.value = -7.25;
  image.collate.max_shape = {3, 16, 16};
  const sample_schema schema{{image}};
  auto layout = blob_layout::make(schema, 2);
  ASSERT_TRUE(layout) << layout.error().what();
  std::vector<std::uint8_t> buffer(layout->bytes, 0xEE);
  const collate_normalize n{0, table};
  auto fields = collate_batch(plan, schema, *layout, buffer.data(), &n);
  ASSERT_EQ(fields[0].type, dtype::float32);
  ASSERT_EQ(fields[0].shape[2], 8) << "6 rows rounded up to 4";
  ASSERT_EQ(fields[0].shape[3], 8) << "5 columns rounded up to 4";
  const auto* v = reinterpret_cast<const float*>(buffer.data() + fields[0].values);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& in = plan.samples[s]->fields[0];
    const int h = sizes[s][0];
    const int w = sizes[s][1];
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 8; ++y) {
        for (int x = 0; x < 8; ++x) {
          const float got = v[((s * 3 + c) * 8 + y) * 8 + x];
          const float want =
              y < h && x < w ? table.channel(c)[in.bytes[(c * h + y) * w + x]] : -7.25F;
          ASSERT_EQ(got, want) << "sample " << s << " channel " << c << " at " << y << "," << x;
        }
      }
    }
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
      auto want = std::move(prepared(files.at(b.keys()[i]), custom_normalize())[1]);
      ASSERT_EQ(want.bytes.size(), sample_bytes);
      EXPECT_TRUE(same_bits(static_cast<const std::uint8_t*>(t.data) + i * sample_bytes, want))
          << b.keys()[i];
      ++checked;
    }
  }
  EXPECT_EQ(checked, files.size());
}

TEST(CollateNormalize, ARaggedImageToNormalizeIsRefusedNamingItsCollate) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "images" / "c0");
  testing::write_file(dir / "images" / "c0" / "a.jpg", testing::make_jpeg(20, 10, 1));
  auto topology = dir / "node.toml";
  std::ofstream(topology) << "[dataset]\npath = \"" << (dir / "images").string()
                          << "\"\nformat = \"folder\"\n"
                             "[[transform]]\nop = \"decode\"\n"
                             "[[transform]]\nop = \"normalize\"\n"
                             "[collate.image]\nmode = \"ragged\"\nmax_values = 100000\n";
  auto p = pipeline::open(topology);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("collate.image: normalize writes this image: it is "
                                     "stacked or padded, not ragged"),
            std::string::npos)
      << p.error().what();
}

}  // namespace
}  // namespace conveyor

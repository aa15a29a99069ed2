// The KiTS19-like case generator (core/codecs/synthetic_volumes.hpp) and the NPY writer: the
// cases read back through Conveyor's NPY decoder as the reference's layout (float32 and uint8,
// 1 x D x H x W, the same shape), shapes differ per case, labels are 0-2 with a tumour inside a
// kidney in every case, intensities lie in the reference's normalised range, and the same seed
// writes the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/codecs/npy_decoder.hpp"
#include "core/codecs/npy_writer.hpp"
#include "core/codecs/synthetic_volumes.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

synthetic_volume_options small() {
  synthetic_volume_options o;
  o.count = 5;
  o.min_extent = 48;
  o.max_side = 72;
  o.max_depth = 160;
  o.threads = 2;
  return o;
}

host_array read_back(const std::filesystem::path& path) {
  auto bytes = testing::read_file(path);
  auto a = decode_npy(bytes);
  EXPECT_TRUE(a) << a.error().what();
  return a ? std::move(*a) : host_array{};
}

TEST(SyntheticVolumes, CasesReadBackInTheReferencesLayout) {
  testing::temp_dir dir;
  auto made = generate_synthetic_volumes(dir / "cases", small());
  ASSERT_TRUE(made) << made.error().what();
  EXPECT_EQ(made->cases, 5u);
  std::set<std::array<std::int64_t, 3>> shapes;
  for (int i = 0; i < 5; ++i) {
    const std::string stem = "case_0000" + std::to_string(i);
    auto x = read_back(dir / "cases" / (stem + "_x.npy"));
    auto y = read_back(dir / "cases" / (stem + "_y.npy"));
    ASSERT_EQ(x.type, dtype::float32);
    ASSERT_EQ(y.type, dtype::uint8);
    ASSERT_EQ(x.rank, 4);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.extent(0), 1);
    for (int axis = 1; axis < 4; ++axis) {
      EXPECT_GE(x.extent(axis), 48) << stem;
    }
    shapes.insert({x.extent(1), x.extent(2), x.extent(3)});
    const auto* v = x.data<float>();
    const float low = (-79.f - 101.f) / 76.9f, high = (304.f - 101.f) / 76.9f;
    EXPECT_TRUE(std::all_of(v, v + x.element_count(), [&](float f) {
      return std::isfinite(f) && f >= low && f <= high;
    })) << stem;
    std::array<std::size_t, 3> count{};
    for (auto c : y.bytes) {
      ASSERT_LE(c, 2) << stem;
      ++count[c];
    }
    EXPECT_GT(count[1], count[2]) << stem << ": kidney around the tumour";
    EXPECT_GT(count[2], 0u) << stem << ": a tumour";
  }
  EXPECT_EQ(shapes.size(), 5u) << "every case its own shape";
}

TEST(SyntheticVolumes, EveryTumourVoxelTouchesOnlyTumourOrKidney) {
  auto made = make_synthetic_case(small(), 3);
  const auto& y = made[1];
  const auto d = y.extent(1), h = y.extent(2), w = y.extent(3);
  auto at = [&](std::int64_t z, std::int64_t r, std::int64_t c) {
    return y.bytes[static_cast<std::size_t>((z * h + r) * w + c)];
  };
  for (std::int64_t z = 1; z + 1 < d; ++z) {
    for (std::int64_t r = 1; r + 1 < h; ++r) {
      for (std::int64_t c = 1; c + 1 < w; ++c) {
        if (at(z, r, c) != 2) {
          continue;
        }
        for (auto n : {at(z - 1, r, c), at(z + 1, r, c), at(z, r - 1, c), at(z, r + 1, c),
                       at(z, r, c - 1), at(z, r, c + 1)}) {
          ASSERT_NE(n, 0) << "a tumour voxel next to background at " << z << "," << r << "," << c;
        }
      }
    }
  }
}

TEST(SyntheticVolumes, TheSameSeedWritesTheSameBytesWhateverTheThreads) {
  auto o = small();
  auto a = make_synthetic_case(o, 2);
  o.threads = 1;
  auto b = make_synthetic_case(o, 2);
  EXPECT_EQ(a[0].bytes, b[0].bytes);
  EXPECT_EQ(a[1].bytes, b[1].bytes);
  o.seed = 9;
  EXPECT_NE(make_synthetic_case(o, 2)[0].bytes, a[0].bytes);
}

TEST(SyntheticVolumes, DepthIsHeavyTailed) {
  synthetic_volume_options o;  // the defaults: 128 .. 640
  std::vector<std::int64_t> depths;
  for (std::uint64_t i = 0; i < 400; ++i) {
    depths.push_back(synthetic_volume_shape(o, i)[0]);
  }
  std::sort(depths.begin(), depths.end());
  EXPECT_GE(depths.front(), 128);
  EXPECT_LT(depths[200], 220) << "median";
  EXPECT_GT(depths[360], 300) << "p90";
  EXPECT_LE(depths.back(), 640);
}

TEST(SyntheticVolumes, ADirectoryWithFilesOrBadExtentsIsRefused) {
  testing::temp_dir dir;
  testing::write_file(dir / "other.txt", std::vector<std::uint8_t>{1});
  auto into_used = generate_synthetic_volumes(dir.path(), small());
  ASSERT_FALSE(into_used);
  EXPECT_NE(into_used.error().message().find("must be an empty directory"), std::string::npos);
  auto o = small();
  o.max_side = 10;
  auto bad = generate_synthetic_volumes(dir / "new", o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
}

TEST(NpyWriter, TheFileIsTheOneNumpySaveWrites) {
  // The headers numpy.save (NumPy 1.24, Debian 12) writes for these arrays, byte for byte.
  const std::string int16_header = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                                   "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }" +
                                   std::string(60, ' ') + "\n";
  const std::string volume_header =
      std::string("\x93NUMPY\x01\x00v\x00", 10) +
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 200, 300, 310), }" +
      std::string(46, ' ') + "\n";
  testing::temp_dir dir;
  auto a = host_array::zeros(dtype::int16, {3});
  a.data<std::int16_t>()[0] = -2;
  ASSERT_TRUE(write_npy(dir / "a.npy", a));
  auto bytes = testing::read_file(dir / "a.npy");
  ASSERT_EQ(bytes.size(), 128u + 6u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 128), int16_header);
  EXPECT_EQ(read_back(dir / "a.npy").data<std::int16_t>()[0], -2);
  ASSERT_TRUE(write_npy(dir / "v.npy", host_array::zeros(dtype::float32, {1, 200, 300, 310})));
  bytes = testing::read_file(dir / "v.npy");
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 128), volume_header);
}

}  // namespace
}  // namespace conveyor

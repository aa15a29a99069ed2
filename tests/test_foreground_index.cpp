// The per-case foreground index of the balanced crop (core/transforms/foreground_index.hpp):
// objects are 6-connected (voxels that touch only along an edge or a corner are two objects,
// as scipy.ndimage.label's default structure has it), each class has its own objects, the two
// largest boxes are kept as the reference's argsort keeps them, and a value above the recipe's
// classes is refused naming the voxel.
#include <gtest/gtest.h>

#include "core/codecs/npy_writer.hpp"
#include "core/storage/byte_source.hpp"
#include "core/transforms/foreground_index.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

constexpr std::int64_t X = 6, Y = 7, Z = 8;

// The index of label `a`, written to `dir` as y.npy and read in place.
expected<case_index> index_of(const testing::temp_dir& dir, const host_array& a, int max_class) {
  EXPECT_TRUE(write_npy(dir / "y.npy", a));
  auto file = open_file_source(dir / "y.npy");
  EXPECT_TRUE(file) << file.error().what();
  auto part = open_volume_part("y.npy", *file, dtype::uint8);
  EXPECT_TRUE(part) << part.error().what();
  return build_case_index(*part, max_class);
}

struct label_volume {
  host_array a = host_array::zeros(dtype::uint8, {1, X, Y, Z});
  void set(std::int64_t x, std::int64_t y, std::int64_t z, std::uint8_t v) {
    a.data<std::uint8_t>()[(x * Y + y) * Z + z] = v;
  }
  expected<case_index> index(const testing::temp_dir& dir, int max_class = 2) const {
    return index_of(dir, a, max_class);
  }
};

volume_box box(std::int64_t x0, std::int64_t x1, std::int64_t y0, std::int64_t y1, std::int64_t z0,
               std::int64_t z1) {
  return {axis_range{x0, x1}, axis_range{y0, y1}, axis_range{z0, z1}};
}

TEST(ForegroundIndex, ObjectsAreSixConnectedPerClassAndTheTwoLargestKept) {
  testing::temp_dir dir;
  label_volume v;
  v.set(0, 0, 0, 1);  // touches (1, 1, 0) along an edge only: two objects
  v.set(1, 1, 0, 1);
  for (std::int64_t z = 2; z < 6; ++z) {  // a bar of 4, joined face to face
    v.set(3, 3, z, 1);
  }
  v.set(3, 4, 2, 2);  // class 2 next to the bar: its own object
  v.set(5, 6, 7, 2);  // a corner voxel, alone
  auto index = v.index(dir);
  ASSERT_TRUE(index) << index.error().what();
  ASSERT_EQ(index->classes.size(), 2u);
  EXPECT_EQ(index->classes[0].value, 1);
  // Class 1 has three objects: volumes 1, 1, 4; kept [second largest, largest]: the later of
  // the two single voxels in raster order (a stable sort), then the bar.
  ASSERT_EQ(index->classes[0].kept.size(), 2u);
  EXPECT_EQ(index->classes[0].kept[0], box(1, 2, 1, 2, 0, 1));
  EXPECT_EQ(index->classes[0].kept[1], box(3, 4, 3, 4, 2, 6));
  ASSERT_EQ(index->classes[1].kept.size(), 2u);
  EXPECT_EQ(index->classes[1].kept[0], box(3, 4, 4, 5, 2, 3));
  EXPECT_EQ(index->classes[1].kept[1], box(5, 6, 6, 7, 7, 8));
}

TEST(ForegroundIndex, AnObjectWindingBackIsOneObject) {
  testing::temp_dir dir;
  label_volume v;
  // A U shape: two arms met only by a later slab (the union must join labels made apart).
  for (std::int64_t y = 0; y < 5; ++y) {
    v.set(0, y, 0, 1);
    v.set(0, y, 4, 1);
  }
  for (std::int64_t z = 0; z < 5; ++z) {
    v.set(1, 4, z, 1);
  }
  auto index = v.index(dir);
  ASSERT_TRUE(index);
  ASSERT_EQ(index->classes.size(), 1u);
  ASSERT_EQ(index->classes[0].kept.size(), 1u);
  EXPECT_EQ(index->classes[0].kept[0], box(0, 2, 0, 5, 0, 5));
}

TEST(ForegroundIndex, AValueAboveTheClassesIsRefusedNamingTheVoxel) {
  testing::temp_dir dir;
  label_volume v;
  v.set(2, 3, 4, 3);
  auto index = v.index(dir);
  ASSERT_FALSE(index);
  EXPECT_NE(index.error().message().find("class 3 at (0, 2, 3, 4)"), std::string::npos)
      << index.error().message();
  EXPECT_TRUE(v.index(dir, 3)) << "max_class 3 admits it";
  label_volume empty;
  auto none = empty.index(dir);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->classes.empty());
}

TEST(ForegroundIndex, ALabelOfCountlessPiecesIsRefusedNotIndexed) {
  // A 3D checkerboard of class 1: every voxel its own 6-connected object, 1.1M of them.
  testing::temp_dir dir;
  constexpr std::int64_t side = 130;
  auto a = host_array::zeros(dtype::uint8, {1, side, side, side});
  auto* v = a.data<std::uint8_t>();
  for (std::int64_t i = 0; i < side * side * side; ++i) {
    v[i] = static_cast<std::uint8_t>((i / (side * side) + i / side + i) % 2);
  }
  auto index = index_of(dir, a, 2);
  ASSERT_FALSE(index);
  EXPECT_NE(index.error().message().find("separate foreground pieces"), std::string::npos)
      << index.error().message();
}

TEST(ForegroundIndex, ALabelIsRefusedAtThePieceOverTheLimitNotAtTheEndOfItsSlab) {
  // One slab, a 2048 x 2048 checkerboard: 1024 pieces a row, 2.1M in the slab. The limit is
  // passed in row 976 (976 x 1024 = 999,424 pieces before it): refused there, with ~50 MB of
  // pieces made, not after the whole slab's 2.1M (202 MB).
  testing::temp_dir dir;
  constexpr std::int64_t side = 2048;
  auto a = host_array::zeros(dtype::uint8, {1, 1, side, side});
  auto* v = a.data<std::uint8_t>();
  for (std::int64_t y = 0; y < side; ++y) {
    for (std::int64_t z = 0; z < side; ++z) {
      v[y * side + z] = static_cast<std::uint8_t>((y + z) % 2);
    }
  }
  auto index = index_of(dir, a, 2);
  ASSERT_FALSE(index);
  EXPECT_NE(index.error().message().find("pieces by voxel (0, 0, 976, "), std::string::npos)
      << index.error().message();
}

}  // namespace
}  // namespace conveyor

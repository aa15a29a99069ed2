// The built-in sample dataset: real, decodable JPEGs with a heavy tail of large images.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "core/codecs/synthetic_images.hpp"
#include "core/storage/image_list.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

synthetic_options small_set(std::uint64_t seed) {
  synthetic_options o;
  o.count = 20;
  o.large_fraction = 0.1;
  o.classes = 3;
  o.seed = seed;
  return o;
}

TEST(SyntheticImages, LayoutSizesAndHeavyTail) {
  temp_dir dir;
  auto made = generate_synthetic_images(dir / "img", small_set(1));
  ASSERT_TRUE(made) << made.error().what();
  EXPECT_EQ(made->files, 20u);
  EXPECT_EQ(made->large, 2u) << "round(20 * 0.1)";
  auto list = scan_image_folder(dir / "img");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->class_names.size(), 3u);
  ASSERT_EQ(list->entries.size(), 20u);
  int large = 0;
  for (const auto& e : list->entries) {
    auto image = cv::imread(e.path.string());
    ASSERT_FALSE(image.empty()) << e.key << " does not decode";
    bool is_large = image.cols >= 1800 && image.rows >= 1800;
    large += is_large ? 1 : 0;
    if (!is_large) {
      EXPECT_GE(std::min(image.cols, image.rows), 300) << e.key;
      EXPECT_LE(std::max(image.cols, image.rows), 640) << e.key;
    } else {
      EXPECT_LE(std::max(image.cols, image.rows), 3200) << e.key;
    }
  }
  EXPECT_EQ(large, 2);
}

TEST(SyntheticImages, SameSeedSameBytesOtherSeedOtherBytes) {
  temp_dir dir;
  auto o = small_set(7);
  o.count = 4;
  o.large_fraction = 0;
  ASSERT_TRUE(generate_synthetic_images(dir / "a", o));
  o.threads = 1;  // the thread count must not matter
  ASSERT_TRUE(generate_synthetic_images(dir / "b", o));
  o.seed = 8;
  ASSERT_TRUE(generate_synthetic_images(dir / "c", o));
  auto a = scan_image_folder(dir / "a");
  auto b = scan_image_folder(dir / "b");
  auto c = scan_image_folder(dir / "c");
  ASSERT_TRUE(a && b && c);
  for (std::size_t i = 0; i < a->entries.size(); ++i) {
    EXPECT_EQ(testing::read_file(a->entries[i].path), testing::read_file(b->entries[i].path));
    EXPECT_NE(testing::read_file(a->entries[i].path), testing::read_file(c->entries[i].path));
  }
}

TEST(SyntheticImages, RefusesADirectoryThatIsNotEmpty) {
  temp_dir dir;
  testing::write_file(dir / "x.jpg", {1});
  auto made = generate_synthetic_images(dir.path(), small_set(1));
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::invalid_argument);
}

}  // namespace
}  // namespace conveyor

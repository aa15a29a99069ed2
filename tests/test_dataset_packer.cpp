// Packing image files into shards, and conveyor-pack as operators run it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include <opencv2/core.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/restart_index.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

image_list make_images(const temp_dir& dir, int n) {
  for (int i = 0; i < n; ++i) {
    auto cls = dir / "img" / ("class_" + std::to_string(i % 3));
    std::filesystem::create_directories(cls);
    testing::write_file(cls / ("img_" + std::to_string(100 + i) + ".jpg"),
                        testing::make_jpeg(60 + i, 50, static_cast<std::uint64_t>(i)));
  }
  auto list = scan_image_folder(dir / "img");
  EXPECT_TRUE(list);
  return *list;
}

TEST(DatasetPacker, EveryFileBecomesARecordWithItsBytesKeyAndLabel) {
  temp_dir dir;
  auto images = make_images(dir, 30);
  std::uint64_t last = 0;
  auto packed = pack_images(images, dir / "shards", {16 * 1024},
                            [&](std::uint64_t done, std::uint64_t total) {
                              EXPECT_EQ(total, 30u);
                              last = done;
                            });
  ASSERT_TRUE(packed) << packed.error().what();
  EXPECT_EQ(last, 30u);
  EXPECT_EQ(packed->records, 30u);
  EXPECT_GT(packed->shards, 2u);
  auto dataset = sharded_dataset::open(dir / "shards");
  ASSERT_TRUE(dataset) << dataset.error().what();
  EXPECT_EQ(dataset->manifest().class_names, images.class_names);
  for (std::uint64_t i = 0; i < dataset->size(); ++i) {
    auto r = dataset->read(i);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->key, images.entries[i].key);
    EXPECT_EQ(r->label, images.entries[i].label);
    EXPECT_EQ(r->payload, testing::read_file(images.entries[i].path));
  }
  auto report = verify_dataset(dir / "shards");
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->problems.empty());
}

TEST(DatasetPacker, AnUnreadableFileStopsPackingAndIsNamed) {
  temp_dir dir;
  auto images = make_images(dir, 5);
  std::filesystem::remove(images.entries[3].path);  // gone after the scan
  auto packed = pack_images(images, dir / "shards", {});
  ASSERT_FALSE(packed);
  EXPECT_NE(packed.error().message().find(images.entries[3].path.string()), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "shards" / manifest_file_name));
}

int run_pack(const std::string& args) {
  int status =
      std::system((std::string(CONVEYOR_PACK_BIN) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PackApp, ExitCodesForGoodAndBadInput) {
  temp_dir dir;
  make_images(dir, 6);
  auto in = (dir / "img").string();
  auto out = (dir / "shards").string();
  EXPECT_EQ(run_pack(in + " --out " + out + " --verify --shard-size 8K"), 0);
  EXPECT_EQ(run_pack("--verify " + out), 0);
  EXPECT_EQ(run_pack(in + " --out " + out), 2) << "refuses to overwrite a dataset";
  EXPECT_EQ(run_pack((dir / "missing").string() + " --out " + (dir / "o2").string()), 2);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_EQ(run_pack((dir / "empty").string() + " --out " + (dir / "o3").string()), 2);
  EXPECT_EQ(run_pack(in + " --out " + (dir / "o4").string() + " --shard-size 12Q"), 2);
  EXPECT_EQ(run_pack("--no-such-flag"), 2);
  // A damaged record makes verification fail with exit code 1.
  auto shard = dir / "shards" / "shard-00000.cvs";
  auto bytes = testing::read_file(shard);
  bytes[100] ^= 0xff;
  testing::write_file(shard, bytes);
  EXPECT_EQ(run_pack("--verify " + out), 1);
}

TEST(PackApp, RestartStoresIndexedJpegsWithTheSamePixelsAndOtherFilesAsTheyAre) {
  temp_dir dir;
  auto images = make_images(dir, 8);
  testing::write_file(dir / "img" / "class_0" / "notes.jpg", {'n', 'o', 't', 'e'});
  auto in = (dir / "img").string();
  auto out = (dir / "shards").string();
  ASSERT_EQ(run_pack(in + " --out " + out + " --restart --verify"), 0);
  auto dataset = sharded_dataset::open(out);
  ASSERT_TRUE(dataset) << dataset.error().what();
  ASSERT_EQ(dataset->size(), 9u);
  int indexed = 0;
  for (std::uint64_t i = 0; i < dataset->size(); ++i) {
    auto r = dataset->read(i);
    ASSERT_TRUE(r);
    auto original = testing::read_file(std::filesystem::path(in) / r->key);
    if (r->key == "class_0/notes.jpg") {
      EXPECT_EQ(r->payload, original);
      continue;
    }
    EXPECT_TRUE(find_restart_index(r->payload.data(), r->payload.size())) << r->key;
    auto before = decode_image(original, {});
    auto after = decode_image(r->payload, {});
    ASSERT_TRUE(before && after) << r->key;
    EXPECT_EQ(cv::norm(*before, *after, cv::NORM_INF), 0) << r->key;
    ++indexed;
  }
  EXPECT_EQ(indexed, 8);
}

}  // namespace
}  // namespace conveyor

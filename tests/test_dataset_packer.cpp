// Packing image files into shards, and conveyor-pack as operators run it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include <opencv2/core.hpp>

#include "core/codecs/jpeg_decoder.hpp"
#include "core/codecs/restart_index.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "support/python_tars.hpp"
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

// The records of the dataset in `dir` are `tars`' samples: the same keys, labels and parts.
void expect_same_samples(const std::filesystem::path& dir, const webdataset& tars) {
  auto dataset = sharded_dataset::open(dir);
  ASSERT_TRUE(dataset) << dataset.error().what();
  ASSERT_EQ(dataset->size(), tars.size());
  for (const auto& shard : dataset->shards()) {
    EXPECT_EQ(shard.version(), shard_format::multipart_version);
  }
  for (std::uint64_t i = 0; i < tars.size(); ++i) {
    auto packed = dataset->read(i);
    auto original = tars.read(i);
    ASSERT_TRUE(packed && original);
    EXPECT_EQ(packed->key, original->key);
    EXPECT_EQ(packed->label, original->label);
    EXPECT_TRUE(packed->multipart);
    EXPECT_EQ(packed->payload, original->payload);
  }
}

TEST(DatasetPacker, ATarSetBecomesMultipartRecordsOfTheSameSamples) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  auto packed = pack_webdataset(*tars, dir / "shards", {8 * 1024});
  ASSERT_TRUE(packed) << packed.error().what();
  EXPECT_EQ(packed->records, set.samples.size());
  EXPECT_GT(packed->shards, 1u);
  expect_same_samples(dir / "shards", *tars);
  auto report = verify_dataset(dir / "shards");
  ASSERT_TRUE(report);
  EXPECT_TRUE(report->problems.empty());
}

TEST(DatasetPacker, ADamagedTarSampleStopsPackingAndIsNamed) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "damaged");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  auto packed = pack_webdataset(*tars, dir / "shards", {});
  ASSERT_FALSE(packed);
  EXPECT_EQ(packed.error().code(), errc::corrupt_shard);
  EXPECT_NE(packed.error().message().find("a.tar key k3"), std::string::npos)
      << packed.error().message();
  EXPECT_FALSE(std::filesystem::exists(dir / "shards" / manifest_file_name));
}

TEST(DatasetPacker, KeyDotExtFilesAreGroupedIntoSamples) {
  temp_dir dir;
  auto root = dir / "parts";
  std::filesystem::create_directories(root / "val");
  auto file = [&](const std::string& name, const std::string& text) {
    testing::write_file(root / name, std::vector<std::uint8_t>(text.begin(), text.end()));
  };
  file("000.jpg", "jpeg 0");
  file("000.cls", "2");
  file("000.seg.PNG", "mask 0");
  file("001.jpg", "jpeg 1");
  file("val/000.jpg", "jpeg v0");
  file("val/000.cls", "\n7\n");
  file("README", "no extension: no sample");
  file(".hidden.jpg", "a hidden file");
  auto files = scan_part_files(root);
  ASSERT_TRUE(files) << files.error().what();
  EXPECT_EQ(files->skipped, 2u);
  ASSERT_EQ(files->samples.size(), 3u);
  auto packed = pack_part_files(*files, dir / "shards", {});
  ASSERT_TRUE(packed) << packed.error().what();
  auto dataset = sharded_dataset::open(dir / "shards");
  ASSERT_TRUE(dataset) << dataset.error().what();
  ASSERT_EQ(dataset->size(), 3u);
  struct want {
    std::string key;
    std::int32_t label;
    std::vector<std::pair<std::string, std::string>> parts;
  };
  const std::vector<want> wanted{
      {"000", 2, {{"cls", "2"}, {"jpg", "jpeg 0"}, {"seg.png", "mask 0"}}},
      {"001", 0, {{"jpg", "jpeg 1"}}},
      {"val/000", 7, {{"cls", "\n7\n"}, {"jpg", "jpeg v0"}}}};
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto r = dataset->read(i);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->key, wanted[i].key);
    EXPECT_EQ(r->label, wanted[i].label);
    auto parts = parts_of(*r);
    ASSERT_TRUE(parts) << parts.error().what();
    ASSERT_EQ(parts->size(), wanted[i].parts.size()) << r->key;
    for (std::size_t p = 0; p < parts->size(); ++p) {
      EXPECT_EQ((*parts)[p].name, wanted[i].parts[p].first);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>((*parts)[p].data), (*parts)[p].size),
                wanted[i].parts[p].second);
    }
  }
}

TEST(DatasetPacker, TwoFilesForOnePartAreRefusedNamingBoth) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "parts");
  testing::write_file(dir / "parts" / "000.JPG", {'a'});
  testing::write_file(dir / "parts" / "000.jpg", {'b'});
  auto files = scan_part_files(dir / "parts");
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().code(), errc::invalid_argument);
  EXPECT_NE(files.error().message().find("000.JPG"), std::string::npos);
  EXPECT_NE(files.error().message().find("000.jpg"), std::string::npos);
  std::filesystem::create_directories(dir / "bad");
  testing::write_file(dir / "bad" / "000.j p g", {'c'});
  auto bad = scan_part_files(dir / "bad");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("\"j p g\""), std::string::npos) << bad.error().message();
  EXPECT_EQ(scan_part_files(dir / "missing").error().code(), errc::not_found);
}

TEST(DatasetPacker, ALinkInsideThePartsIsAPartUnderItsOwnName) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "parts");
  testing::write_file(dir / "parts" / "000.jpg", {'j'});
  std::filesystem::create_symlink("000.jpg", dir / "parts" / "001.jpg");
  auto files = scan_part_files(dir / "parts");
  ASSERT_TRUE(files) << files.error().what();
  ASSERT_EQ(files->samples.size(), 2u);
  EXPECT_EQ(files->samples[1].key, "001");
  auto r = read_part_files(files->samples[1]);
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*parts_of(*r))[0].data), 1), "j");
}

// A link out of the directory would pack another file's bytes (a key, a token) into shards
// others read: refused, naming the link and where it leads; conveyor-pack exits with 2.
TEST(DatasetPacker, ALinkOutOfThePartsIsRefusedNamingItAndItsTarget) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "parts");
  testing::write_file(dir / "parts" / "000.jpg", {'j'});
  testing::write_file(dir / "secret", {'s'});
  std::filesystem::create_symlink(dir / "secret", dir / "parts" / "000.cls");
  auto files = scan_part_files(dir / "parts");
  ASSERT_FALSE(files);
  EXPECT_EQ(files.error().code(), errc::invalid_argument);
  const auto link = (dir / "parts" / "000.cls").string();
  EXPECT_NE(files.error().message().find(link + " is a symbolic link to " +
                                         std::filesystem::canonical(dir / "secret").string() +
                                         ", outside the dataset directory"),
            std::string::npos)
      << files.error().message();
  EXPECT_EQ(run_pack("--parts " + (dir / "parts").string() + " --out " + (dir / "o").string()), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "o" / manifest_file_name));
}

TEST(PackApp, PacksATarSetAndADirectoryOfPartsIntoVerifiedShards) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto out = dir / "from-tars";
  ASSERT_EQ(run_pack("--webdataset " + set.dir.string() + " --out " + out.string() +
                     " --shard-size 8K --verify"),
            0);
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars);
  expect_same_samples(out, *tars);
  EXPECT_EQ(run_pack("--verify " + out.string()), 0);
  // One tar alone.
  auto one = dir / "one-tar";
  ASSERT_EQ(
      run_pack("--webdataset " + (set.dir / "shard-002.tar").string() + " --out " + one.string()),
      0);
  EXPECT_EQ(sharded_dataset::open(one)->size(), 2u);
  // key.ext files.
  std::filesystem::create_directories(dir / "parts");
  testing::write_file(dir / "parts" / "a.jpg", {'j'});
  testing::write_file(dir / "parts" / "a.cls", {'5'});
  ASSERT_EQ(run_pack("--parts " + (dir / "parts").string() + " --out " +
                     (dir / "from-parts").string() + " --verify"),
            0);
  auto parts = sharded_dataset::open(dir / "from-parts");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->read(0)->label, 5);
  // Bad input is the operator's to fix: exit code 2.
  EXPECT_EQ(
      run_pack("--webdataset " + (dir / "missing").string() + " --out " + (dir / "o1").string()),
      2);
  EXPECT_EQ(run_pack("--parts " + (dir / "parts").string()), 2) << "no --out";
  EXPECT_EQ(run_pack("--parts " + (dir / "parts").string() + " --webdataset " + set.dir.string() +
                     " --out " + (dir / "o2").string()),
            2);
}

}  // namespace
}  // namespace conveyor

// A dataset directory: shards of a target size plus a manifest, read back by global index.
#include <gtest/gtest.h>

#include <fstream>

#include "core/storage/dataset_writer.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/sample_source.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

// Writes `n` real JPEGs of a few KB into a dataset with small shards; returns the payloads.
std::vector<std::vector<std::uint8_t>> write_dataset(const std::filesystem::path& dir,
                                                     std::size_t n, std::uint64_t shard_bytes) {
  auto writer = dataset_writer::create(dir, {"cat", "dog"}, {shard_bytes});
  EXPECT_TRUE(writer) << writer.error().what();
  std::vector<std::vector<std::uint8_t>> payloads;
  for (std::size_t i = 0; i < n; ++i) {
    payloads.push_back(testing::make_jpeg(48 + static_cast<int>(i % 7), 40, i));
    auto label = static_cast<std::int32_t>(i % 2);
    auto ok = writer->append("img_" + std::to_string(i), label, payloads.back().data(),
                             payloads.back().size());
    EXPECT_TRUE(ok) << ok.error().what();
  }
  auto manifest = writer->finish();
  EXPECT_TRUE(manifest) << manifest.error().what();
  return payloads;
}

TEST(ShardedDataset, RollsShardsAtTheTargetSizeAndReadsBackByGlobalIndex) {
  temp_dir dir;
  auto payloads = write_dataset(dir.path(), 60, 8 * 1024);
  auto dataset = sharded_dataset::open(dir.path());
  ASSERT_TRUE(dataset) << dataset.error().what();
  EXPECT_GT(dataset->shards().size(), 3u);
  EXPECT_EQ(dataset->size(), 60u);
  EXPECT_EQ(dataset->manifest().class_names, (std::vector<std::string>{"cat", "dog"}));
  for (std::uint64_t i = 0; i < dataset->size(); ++i) {
    auto r = dataset->read(i);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->key, "img_" + std::to_string(i));
    EXPECT_EQ(r->label, static_cast<std::int32_t>(i % 2));
    EXPECT_EQ(r->payload, payloads[i]);
  }
  EXPECT_FALSE(dataset->read(60));
}

TEST(ShardedDataset, ACopyOfARecordIsCheckedAgainstItsStoredHeaderAndChecksum) {
  temp_dir dir;
  write_dataset(dir.path(), 12, 8 * 1024);
  auto source = open_sample_source(dir.path(), dataset_format::shards);
  ASSERT_TRUE(source) << source.error().what();
  const auto& dataset = **source;
  auto original = dataset.read(5);
  ASSERT_TRUE(original);
  EXPECT_TRUE(dataset.check(5, *original));
  auto expect_differs = [&](const record& got, const std::string& what) {
    auto checked = dataset.check(5, got);
    ASSERT_FALSE(checked) << what;
    EXPECT_EQ(checked.error().code(), errc::checksum_mismatch);
    EXPECT_NE(checked.error().message().find("record "), std::string::npos)
        << checked.error().what();
    EXPECT_NE(checked.error().message().find(what), std::string::npos) << checked.error().what();
  };
  auto other = dataset.read(6);  // another sample's record: its own key and bytes
  ASSERT_TRUE(other);
  expect_differs(*other, "differ from the index");
  auto renamed = *original;
  renamed.key.back() = 'x';  // same size, another key
  expect_differs(renamed, "key \"img_x\" is not this record's");
  auto relabelled = *original;
  relabelled.label += 1;
  expect_differs(relabelled, "label");
  auto flipped = *original;
  flipped.payload[flipped.payload.size() / 2] ^= 0xffU;
  expect_differs(flipped, "payload does not match the record's checksum");
  auto cut = *original;
  cut.payload.pop_back();
  expect_differs(cut, "differ from the index");
  EXPECT_FALSE(dataset.check(12, *original));  // out of range: refused, not read
}

TEST(ShardedDataset, AnImageFolderChecksKeyLabelAndSize) {
  temp_dir dir;
  auto source = open_sample_source(testing::make_image_folder(dir, 4), dataset_format::folder);
  ASSERT_TRUE(source) << source.error().what();
  auto original = (*source)->read(1);
  ASSERT_TRUE(original);
  EXPECT_TRUE((*source)->check(1, *original));
  auto other = (*source)->read(2);
  ASSERT_TRUE(other);
  auto checked = (*source)->check(1, *other);
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message().find("is not this sample's"), std::string::npos)
      << checked.error().what();
  auto cut = *original;
  cut.payload.pop_back();
  EXPECT_FALSE((*source)->check(1, cut));
}

TEST(ShardedDataset, VerifyCountsEverythingAndFindsNoProblemInAGoodDataset) {
  temp_dir dir;
  auto payloads = write_dataset(dir.path(), 30, 16 * 1024);
  std::uint64_t last_progress = 0;
  auto report = verify_dataset(dir.path(), [&](std::uint64_t n) { last_progress = n; });
  ASSERT_TRUE(report) << report.error().what();
  EXPECT_EQ(report->records, 30u);
  EXPECT_EQ(last_progress, 30u);
  std::uint64_t bytes = 0;
  for (const auto& p : payloads) {
    bytes += p.size();
  }
  EXPECT_EQ(report->payload_bytes, bytes);
  EXPECT_TRUE(report->problems.empty());
}

TEST(ShardedDataset, VerifyNamesEachDamagedShardAndRecord) {
  temp_dir dir;
  write_dataset(dir.path(), 30, 16 * 1024);
  auto manifest = read_manifest(dir.path());
  ASSERT_TRUE(manifest);
  ASSERT_GE(manifest->shards.size(), 2u);
  // Flip a byte in the last record of the first shard and truncate the second shard.
  auto first = dir / manifest->shards[0].file;
  auto bytes = testing::read_file(first);
  bytes[bytes.size() - shard_format::trailer_size -
        manifest->shards[0].records * shard_format::index_entry_size - 5] ^= 0x40;
  testing::write_file(first, bytes);
  std::filesystem::resize_file(dir / manifest->shards[1].file, 100);

  auto report = verify_dataset(dir.path());
  ASSERT_TRUE(report);
  ASSERT_EQ(report->problems.size(), 2u);
  auto last = std::to_string(manifest->shards[0].records - 1);
  EXPECT_EQ(report->problems[0].code(), errc::checksum_mismatch);
  EXPECT_NE(report->problems[0].message().find(first.string() + " record " + last),
            std::string::npos)
      << report->problems[0].message();
  EXPECT_EQ(report->problems[1].code(), errc::corrupt_shard);
  EXPECT_NE(report->problems[1].message().find(manifest->shards[1].file), std::string::npos);
  EXPECT_EQ(report->records, 30u - 1 - manifest->shards[1].records);
}

TEST(ShardedDataset, MultipartRecordsRoundTripThroughVersion2Shards) {
  temp_dir dir;
  auto writer = dataset_writer::create(dir.path(), {}, {4 * 1024});
  ASSERT_TRUE(writer);
  std::vector<record> records;
  for (int i = 0; i < 40; ++i) {
    auto jpeg = testing::make_jpeg(40 + i % 5, 32, static_cast<std::uint64_t>(i));
    auto cls = std::to_string(i % 4);
    const bool multipart = i % 3 != 0;
    record r{"s/" + std::to_string(i) + (multipart ? "" : ".jpg"), i % 4, {}, multipart};
    r.payload = r.multipart ? encode_parts({{"jpg", jpeg}, {"cls", {cls.begin(), cls.end()}}})
                            : jpeg;  // single-part records beside them
    ASSERT_TRUE(writer->append(r));
    records.push_back(std::move(r));
  }
  ASSERT_TRUE(writer->finish());
  auto source = open_sample_source(dir.path(), dataset_format::shards);
  ASSERT_TRUE(source) << source.error().what();
  const auto& dataset = **source;
  ASSERT_EQ(dataset.size(), records.size());
  for (std::uint64_t i = 0; i < dataset.size(); ++i) {
    auto r = dataset.read(i);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(r->key, records[i].key);
    EXPECT_EQ(r->label, records[i].label);
    EXPECT_EQ(r->multipart, records[i].multipart);
    EXPECT_EQ(r->payload, records[i].payload);
    EXPECT_TRUE(dataset.check(i, *r));
    auto parts = parts_of(*r);
    ASSERT_TRUE(parts);
    EXPECT_NE(find_part(*parts, "jpg"), nullptr);
  }
  auto report = verify_dataset(dir.path());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->records, records.size());
  EXPECT_TRUE(report->problems.empty());
}

TEST(ShardedDataset, WriterRefusesADirectoryThatHoldsADataset) {
  temp_dir dir;
  write_dataset(dir.path(), 3, 1 << 20);
  auto again = dataset_writer::create(dir.path(), {});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), errc::invalid_argument);
}

TEST(ShardedDataset, EmptyDatasetIsAnError) {
  temp_dir dir;
  auto writer = dataset_writer::create(dir.path(), {});
  ASSERT_TRUE(writer);
  auto manifest = writer->finish();
  ASSERT_FALSE(manifest);
  EXPECT_EQ(manifest.error().code(), errc::empty_dataset);
}

TEST(ShardedDataset, MissingDirectoryIsNotFound) {
  temp_dir dir;
  auto dataset = sharded_dataset::open(dir / "nowhere");
  ASSERT_FALSE(dataset);
  EXPECT_EQ(dataset.error().code(), errc::not_found);
  EXPECT_NE(dataset.error().message().find("nowhere"), std::string::npos);
}

TEST(ShardedDataset, ShardThatDisagreesWithTheManifestIsNamed) {
  temp_dir dir;
  write_dataset(dir.path(), 30, 16 * 1024);
  auto manifest = read_manifest(dir.path());
  ASSERT_TRUE(manifest);
  // Swap two shards' files: each is a valid shard, but not the one the manifest lists.
  auto a = dir / manifest->shards[0].file;
  auto b = dir / manifest->shards[1].file;
  std::filesystem::rename(a, dir / "tmp");
  std::filesystem::rename(b, a);
  std::filesystem::rename(dir / "tmp", b);
  auto dataset = sharded_dataset::open(dir.path());
  ASSERT_FALSE(dataset);
  EXPECT_EQ(dataset.error().code(), errc::corrupt_shard);
  EXPECT_NE(dataset.error().message().find(manifest->shards[0].file), std::string::npos);
}

struct bad_manifest_case {
  std::string text;
  std::string needle;
};

class BadManifest : public ::testing::TestWithParam<bad_manifest_case> {};

TEST_P(BadManifest, NamesFileAndLine) {
  temp_dir dir;
  std::ofstream(dir / manifest_file_name) << GetParam().text;
  auto m = read_manifest(dir.path());
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find(GetParam().needle), std::string::npos) << m.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadManifest,
    ::testing::Values(
        bad_manifest_case{"something else\n", "manifest.txt:1"},
        bad_manifest_case{"conveyor-dataset 1\nclass 1 cat\n", "manifest.txt:2"},
        bad_manifest_case{"conveyor-dataset 1\n\nshard a.cvs 3 100\n", "manifest.txt:3"},
        bad_manifest_case{"conveyor-dataset 1\nshard a.cvs 3 100 0123456789abcdeg\n",
                          "manifest.txt:2"},
        bad_manifest_case{"conveyor-dataset 1\nbogus 1\n", "unknown entry 'bogus'"},
        bad_manifest_case{"conveyor-dataset 1\nclass 0 cat extra\n", "unexpected 'extra'"},
        bad_manifest_case{"conveyor-dataset 1\n", "lists no shards"}));

}  // namespace
}  // namespace conveyor

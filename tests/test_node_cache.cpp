// conveyor-node with [cache] (CoorDL's MinIO cache): with a cache of half a generated set, the
// first epoch reads every sample from storage and fills the cache; epochs 2 and 3 read from
// storage exactly the samples it does not hold, and serve the others from memory (and, with a
// disk tier, from a file on the local disk).
#include <gtest/gtest.h>

#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::json_array;
using testing::json_number;
using testing::run_node;
using testing::temp_dir;

constexpr std::uint64_t images = 41;

std::uint64_t folder_bytes(const std::filesystem::path& root) {
  std::uint64_t bytes = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(root)) {
    bytes += f.is_regular_file() ? f.file_size() : 0;
  }
  return bytes;
}

// A node's topology over `folder`: 3 epochs, the transforms of a training recipe, and `cache`
// (the body of a [cache] table).
std::filesystem::path cached_node(const temp_dir& dir, const std::filesystem::path& folder,
                                  const std::string& cache) {
  return testing::write_topology(dir, "gpus = 2\n[dataset]\npath = \"" + folder.string() +
                                          "\"\nformat = \"folder\"\n"
                                          "[pipeline]\nbatch_size = 4\npreprocessors = 2\n"
                                          "[trainer]\nepochs = 3\n[monitor]\ninterval_ms = 1000\n"
                                          "[cache]\n" +
                                          cache +
                                          "[[transform]]\nop = \"decode\"\n"
                                          "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
                                          "[[transform]]\nop = \"to_uint8\"\n");
}

// Epoch 1 reads everything from storage; epochs 2 and 3 exactly the `uncached` samples.
void expect_storage_reads_after_epoch_one(const std::string& json, std::uint64_t uncached) {
  auto reads = json_array(json, "storage_reads");
  auto hits = json_array(json, "cache_hits");
  ASSERT_EQ(reads.size(), 3u) << json;
  ASSERT_EQ(hits.size(), 3u) << json;
  EXPECT_EQ(reads[0], images);  // the first epoch fills the cache
  EXPECT_EQ(hits[0], 0);
  for (std::size_t e = 1; e < 3; ++e) {
    EXPECT_EQ(reads[e], uncached) << "epoch " << e;
    EXPECT_EQ(hits[e], images - uncached) << "epoch " << e;
  }
  EXPECT_EQ(json_number(json, "lost"), 0u);
}

TEST(NodeCache, AHalfCacheLeavesExactlyTheUncachedHalfToStorageAfterEpochOne) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto file =
      cached_node(dir, folder, "memory = \"" + std::to_string(folder_bytes(folder) / 2) + "\"\n");
  auto r = run_node(dir, "--topology " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cached = json_number(r.out, "cached_samples");
  EXPECT_GT(cached, 0u);
  EXPECT_LT(cached, images);
  expect_storage_reads_after_epoch_one(r.out, images - cached);
  auto mb = json_array(r.out, "storage_mb");
  ASSERT_EQ(mb.size(), 3u);
  EXPECT_LT(mb[1], mb[0]);
  EXPECT_EQ(json_array(r.out, "disk_hits"), (std::vector<double>{0, 0, 0}));
  EXPECT_NE(r.err.find("cache: " + std::to_string(cached) + " of 41 samples"), std::string::npos)
      << r.err;

  auto bad = run_node(dir, "--topology " + file.string() + " --set cache.memory=\\\"lots\\\"");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cache.memory"), std::string::npos) << bad.err;
}

TEST(NodeCache, ADiskTierServesWhatMemoryCannotHold) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto tier = dir / "nvme";
  std::filesystem::create_directory(tier);
  const auto quarter = folder_bytes(folder) / 4;
  auto file =
      cached_node(dir, folder,
                  "memory = \"" + std::to_string(quarter) + "\"\ndisk = \"" + tier.string() +
                      "\"\ndisk_size = \"" + std::to_string(quarter) + "\"\n");
  auto r = run_node(dir, "--topology " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cached = json_number(r.out, "cached_samples");
  expect_storage_reads_after_epoch_one(r.out, images - cached);
  auto disk_hits = json_array(r.out, "disk_hits");
  ASSERT_EQ(disk_hits.size(), 3u);
  EXPECT_EQ(disk_hits[0], 0);
  EXPECT_GT(disk_hits[1], 0);
  EXPECT_EQ(disk_hits[1], disk_hits[2]);         // the same samples every epoch
  EXPECT_LT(disk_hits[1], cached);               // the rest came from memory
  EXPECT_TRUE(std::filesystem::is_empty(tier));  // the tier's file has no name

  auto gone = run_node(dir, "--topology " + file.string() + " --set cache.disk=\\\"" +
                                (dir / "nowhere").string() + "\\\"");
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.err.find("cache.disk " + (dir / "nowhere").string() + ": not a directory"),
            std::string::npos)
      << gone.err;
}

}  // namespace
}  // namespace conveyor

// conveyor-node with [cache] (CoorDL's MinIO cache): with a cache of half a generated set, the
// first epoch reads every sample from storage and fills the cache; epochs 2 and 3 read from
// storage exactly the samples it does not hold, and serve the others from memory.
#include <gtest/gtest.h>

#include <regex>

#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::json_number;
using testing::run_node;
using testing::temp_dir;

constexpr std::uint64_t images = 41;

// The numbers of a JSON array field ("key":[a,b,...]).
std::vector<double> json_array(const std::string& json, const std::string& key) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"" + key + "\":\\[([^\\]]*)\\]")))
      << key << " missing in " << json;
  std::vector<double> out;
  std::string items = m.empty() ? "" : m[1].str();
  std::regex number("[0-9.e+-]+");
  for (auto it = std::sregex_iterator(items.begin(), items.end(), number);
       it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod(it->str()));
  }
  return out;
}

std::uint64_t folder_bytes(const std::filesystem::path& root) {
  std::uint64_t bytes = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(root)) {
    bytes += f.is_regular_file() ? f.file_size() : 0;
  }
  return bytes;
}

TEST(NodeCache, AHalfCacheLeavesExactlyTheUncachedHalfToStorageAfterEpochOne) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto file =
      testing::write_topology(dir, "gpus = 2\n[dataset]\npath = \"" + folder.string() +
                                       "\"\nformat = \"folder\"\n"
                                       "[pipeline]\nbatch_size = 4\npreprocessors = 2\n"
                                       "[trainer]\nepochs = 3\n[monitor]\ninterval_ms = 1000\n"
                                       "[cache]\nmemory = \"" +
                                       std::to_string(folder_bytes(folder) / 2) +
                                       "\"\n"
                                       "[[transform]]\nop = \"decode\"\n"
                                       "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
                                       "[[transform]]\nop = \"to_uint8\"\n");
  auto r = run_node(dir, "--topology " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cached = json_number(r.out, "cached_samples");
  EXPECT_GT(cached, 0u);
  EXPECT_LT(cached, images);
  auto reads = json_array(r.out, "storage_reads");
  auto hits = json_array(r.out, "cache_hits");
  ASSERT_EQ(reads.size(), 3u) << r.out;
  ASSERT_EQ(hits.size(), 3u) << r.out;
  EXPECT_EQ(reads[0], images);  // the first epoch fills the cache
  EXPECT_EQ(hits[0], 0);
  for (std::size_t e = 1; e < 3; ++e) {
    EXPECT_EQ(reads[e], images - cached) << "epoch " << e;
    EXPECT_EQ(hits[e], cached) << "epoch " << e;
  }
  auto mb = json_array(r.out, "storage_mb");
  ASSERT_EQ(mb.size(), 3u);
  EXPECT_LT(mb[1], mb[0]);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_NE(r.err.find("cache: " + std::to_string(cached) + " of 41 samples"), std::string::npos)
      << r.err;

  auto bad = run_node(dir, "--topology " + file.string() + " --set cache.memory=\\\"lots\\\"");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cache.memory"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace conveyor

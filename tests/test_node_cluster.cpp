// Several conveyor-node processes training one job ([cluster] rank, world): each prepares its
// share of every epoch, and their ids files together hold every sample exactly once per epoch,
// split by sample (an image folder) or by record shard (each node reads only its own shards).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/storage/dataset_packer.hpp"
#include "core/storage/image_list.hpp"
#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::json_number;
using testing::run_node;
using testing::temp_dir;

constexpr std::uint64_t images = 41;
constexpr int world = 3;

std::filesystem::path topology(const temp_dir& dir, const std::filesystem::path& dataset,
                               const std::string& format) {
  return testing::write_topology(dir, "gpus = 2\n[dataset]\npath = \"" + dataset.string() +
                                          "\"\nformat = \"" + format +
                                          "\"\nseed = 5\n"
                                          "[pipeline]\nbatch_size = 4\npreprocessors = 2\n"
                                          "[trainer]\nepochs = 2\n[monitor]\ninterval_ms = 1000\n"
                                          "[[transform]]\nop = \"decode\"\n"
                                          "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
                                          "[[transform]]\nop = \"to_uint8\"\n");
}

// Runs the `world` nodes of a cluster one after the other; every sample of both epochs must be
// in exactly one node's ids file.
void expect_the_cluster_delivers_each_sample_once(const temp_dir& dir,
                                                  const std::filesystem::path& file,
                                                  const std::string& split) {
  testing::epoch_ids all;
  std::uint64_t shares = 0;
  for (int rank = 0; rank < world; ++rank) {
    auto ids = dir / ("ids-" + split + "-" + std::to_string(rank));
    auto r = run_node(
        dir, "--topology " + file.string() + " --set cluster.rank=" + std::to_string(rank) +
                 " --set cluster.world=" + std::to_string(world) + " --set cluster.shard_by=\\\"" +
                 split + "\\\" --set trainer.ids_file=" + ids.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_number(r.out, "lost"), 0u) << r.out;
    const auto share = json_number(r.out, "epoch_samples");
    EXPECT_GT(share, 0u) << "rank " << rank;
    EXPECT_LT(share, images) << "rank " << rank;
    shares += share;
    for (const auto& [e, got] : testing::read_ids_file(ids)) {
      EXPECT_EQ(got.size(), share) << "rank " << rank << " epoch " << e;
      all[e].insert(got.begin(), got.end());
    }
  }
  EXPECT_EQ(shares, images);
  ASSERT_EQ(all.size(), 2u);
  for (const auto& [e, got] : all) {
    for (std::uint64_t id = 0; id < images; ++id) {
      EXPECT_EQ(got.count(id), 1u) << split << ": epoch " << e << " sample " << id;
    }
  }
}

TEST(NodeCluster, ThreeNodesSplitEveryEpochBySample) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  expect_the_cluster_delivers_each_sample_once(dir, topology(dir, folder, "folder"), "sample");
}

TEST(NodeCluster, ThreeNodesSplitEveryEpochByShard) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto list = scan_image_folder(folder);
  ASSERT_TRUE(list) << list.error().what();
  auto packed = pack_images(*list, dir / "shards", {16 * 1024});  // several small shards
  ASSERT_TRUE(packed) << packed.error().what();
  ASSERT_GE(packed->shards, static_cast<std::uint64_t>(world));
  expect_the_cluster_delivers_each_sample_once(dir, topology(dir, dir / "shards", "shards"),
                                               "shard");
}

TEST(NodeCluster, ABadPlaceInTheClusterStopsStartUpWithExitTwo) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 5);
  auto file = topology(dir, folder, "folder");
  auto rank =
      run_node(dir, "--topology " + file.string() + " --set cluster.world=2 --set cluster.rank=2");
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_NE(rank.err.find("cluster.rank"), std::string::npos) << rank.err;
  ::setenv("RANK", "x", 1);  // as a launcher would set it, badly
  auto env = run_node(dir, "--topology " + file.string());
  ::unsetenv("RANK");
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_NE(env.err.find("RANK"), std::string::npos) << env.err;
  ::setenv("RANK", "1", 1);  // torchrun's: rank 1 of 2
  ::setenv("WORLD_SIZE", "2", 1);
  auto from_env = run_node(dir, "--topology " + file.string());
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  ASSERT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(json_number(from_env.out, "epoch_samples"), 2u);  // positions 1 and 3 of 5
  auto by_shard = run_node(dir, "--topology " + file.string() +
                                    " --set cluster.world=2 --set cluster.shard_by=\\\"shard\\\"");
  EXPECT_EQ(by_shard.exit_code, 2);
  EXPECT_NE(by_shard.err.find("cluster.shard_by"), std::string::npos) << by_shard.err;
}

}  // namespace
}  // namespace conveyor

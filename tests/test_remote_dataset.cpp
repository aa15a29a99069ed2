// Datasets in object storage against a real S3-compatible server on a loopback port
// (support/s3_server.hpp: moto_server, or s3rver): uploads (conveyor-pack's), record shards and
// WebDataset tars read as their local files read, the reads ahead coalesced, the cache's blocks
// fetched once, virtual-host addressing, what a reader is told when objects are missing, and a
// range no buffer can hold (an object's size as a lying store gives it) failing its read alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/batching/epoch_order.hpp"
#include "core/remote/open_remote_dataset.hpp"
#include "core/remote/upload_dataset.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/image_list.hpp"
#include "core/storage/minio_cache.hpp"
#include "core/storage/part_files.hpp"
#include "core/storage/sharded_dataset.hpp"
#include "support/python_tars.hpp"
#include "support/s3_server.hpp"

namespace conveyor {
namespace {

using testing::s3_server;
using testing::temp_dir;

// A local record shard set of `images` small JPEGs in shards of about `shard_bytes`.
std::filesystem::path pack_local(const temp_dir& dir, int images, std::uint64_t shard_bytes) {
  auto list = scan_image_folder(testing::make_image_folder(dir, images));
  EXPECT_TRUE(list);
  auto out = dir / "shards";
  auto packed = pack_images(*list, out, {shard_bytes});
  EXPECT_TRUE(packed) << (packed ? "" : packed.error().what());
  return out;
}

std::shared_ptr<const remote_dataset> open_remote(const s3_server& server, const std::string& url,
                                                  dataset_format format, s3_settings settings) {
  auto opened = open_remote_dataset(url, format, settings, 0, server.credentials());
  EXPECT_TRUE(opened) << (opened ? "" : opened.error().what());
  return opened ? *opened : nullptr;
}

void expect_same_records(const sample_source& local, const sample_source& remote) {
  ASSERT_EQ(local.size(), remote.size());
  for (std::uint64_t id = 0; id < local.size(); ++id) {
    auto a = local.read(id);
    auto b = remote.read(id);
    ASSERT_TRUE(a && b) << remote.locate(id) << ": " << (b ? "" : b.error().what());
    EXPECT_EQ(a->key, b->key);
    EXPECT_EQ(a->label, b->label);
    EXPECT_EQ(a->payload, b->payload) << remote.locate(id);
  }
}

class RemoteDataset : public ::testing::Test {
 protected:
  void SetUp() override { server_.make_bucket("data"); }
  s3_server server_;
  temp_dir dir_;
};

TEST_F(RemoteDataset, UploadedShardsReadAsTheirLocalFiles) {
  auto local_dir = pack_local(dir_, 40, 64 << 10);
  auto sent = upload_dataset(local_dir, "s3://data/sets/small", server_.settings(), {},
                             server_.credentials());
  ASSERT_TRUE(sent) << sent.error().what();
  auto manifest = read_manifest(local_dir);
  EXPECT_EQ(sent->objects, manifest->shards.size() + 1);
  auto local = open_sample_source(local_dir, dataset_format::shards);
  auto remote =
      open_remote(server_, "s3://data/sets/small", dataset_format::shards, server_.settings());
  ASSERT_TRUE(local && remote);
  expect_same_records(**local, *remote);
  EXPECT_EQ(remote->locate(0).rfind("s3://data/sets/small/", 0), 0u) << remote->locate(0);
  EXPECT_EQ(remote->class_names(), (*local)->class_names());
  EXPECT_TRUE(remote->files().empty());  // objects, not files of this machine
}

TEST_F(RemoteDataset, ALargeShardGoesUpInPartsAndComesBackWhole) {
  // Two samples of 6 MiB of random bytes each: one shard past the 8 MiB part size.
  std::filesystem::create_directories(dir_ / "big");
  std::mt19937_64 noise(3);
  for (int i = 0; i < 2; ++i) {
    std::vector<std::uint8_t> bytes(6u << 20);
    for (auto& b : bytes) {
      b = static_cast<std::uint8_t>(noise());
    }
    testing::write_file(dir_ / "big" / ("s" + std::to_string(i) + ".bin"), bytes);
  }
  auto files = scan_part_files(dir_ / "big");
  ASSERT_TRUE(files);
  auto packed = pack_part_files(*files, dir_ / "big-shards", {256u << 20});
  ASSERT_TRUE(packed);
  ASSERT_GT(packed->dataset_bytes, 8u << 20) << "the shard must need more than one part";
  auto sent = upload_dataset(dir_ / "big-shards", "s3://data/big", server_.settings(), {},
                             server_.credentials());
  ASSERT_TRUE(sent) << sent.error().what();
  EXPECT_GE(sent->traffic.requests, 5u);  // delete, begin, two parts or more, complete, manifest
  auto local = open_sample_source(dir_ / "big-shards", dataset_format::shards);
  auto remote = open_remote(server_, "s3://data/big", dataset_format::shards, server_.settings());
  ASSERT_TRUE(local && remote);
  expect_same_records(**local, *remote);
}

TEST_F(RemoteDataset, WebDatasetTarsWrittenByPythonReadAsLocally) {
  auto set = testing::make_python_tars(dir_, "clean");
  for (const auto& entry : std::filesystem::directory_iterator(set.dir)) {
    server_.put("data", "wds/" + entry.path().filename().string(),
                testing::read_file(entry.path()));
  }
  auto settings = server_.settings();
  settings.read_size = 4096;  // the member headers walked over many blocks
  auto local = open_sample_source(set.dir, dataset_format::webdataset);
  auto remote = open_remote(server_, "s3://data/wds", dataset_format::webdataset, settings);
  ASSERT_TRUE(local && remote);
  expect_same_records(**local, *remote);
  EXPECT_NE(remote->locate(0).find("s3://data/wds/"), std::string::npos);
  EXPECT_NE(remote->locate(0).find(" key "), std::string::npos);
  // One tar by its own address.
  auto first_tar = std::string("s3://data/wds/") + set.samples.front().tar;
  auto one = open_remote(server_, first_tar, dataset_format::webdataset, settings);
  ASSERT_TRUE(one);
  EXPECT_EQ((*one).read(0)->key, set.samples.front().key);
}

// WebDataset tars written by Python's tarfile, read in an order in blocks as the batcher tells
// it (each span's samples at once, before they are read): a block is one range GET (two where
// it straddles tars), every record is the local one, and everything fetched ahead was read.
TEST_F(RemoteDataset, TarsReadInBlocksFetchEachBlockWhole) {
  auto set = testing::make_python_tars(dir_, "clean");
  for (const auto& entry : std::filesystem::directory_iterator(set.dir)) {
    server_.put("data", "wds/" + entry.path().filename().string(),
                testing::read_file(entry.path()));
  }
  auto local = open_sample_source(set.dir, dataset_format::webdataset);
  auto remote =
      open_remote(server_, "s3://data/wds", dataset_format::webdataset, server_.settings());
  ASSERT_TRUE(local && remote);
  const auto n = remote->size();
  const auto order = sample_order::in_blocks(4, 2);
  const auto blocks = (n + 3) / 4;
  std::uint64_t tars = 0;
  for (std::uint64_t id = 0; id < n; ++id) {
    tars = std::max(tars, *remote->shard_of(id) + 1);
  }
  const auto before = remote->counters().snapshot().requests;
  const auto ids = epoch_order(n, 3, 0, order);
  const auto spans = block_spans(n, 3, 0, order);
  for (std::size_t at = 0; at < ids.size();) {
    auto end = at;
    while (end < ids.size() && spans[ids[end] / 4] == spans[ids[at] / 4]) {
      ++end;
    }
    std::vector<std::uint64_t> span(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                    ids.begin() + static_cast<std::ptrdiff_t>(end));
    remote->will_read(0, span);
    for (auto id : span) {
      auto a = (*local)->read(id);
      auto b = remote->read(id);
      ASSERT_TRUE(a && b) << remote->locate(id);
      EXPECT_EQ(a->payload, b->payload) << remote->locate(id);
    }
    at = end;
  }
  const auto requests = remote->counters().snapshot().requests - before;
  EXPECT_LE(requests, blocks + tars)
      << n << " samples, " << blocks << " blocks in " << tars << " tars";
  EXPECT_EQ(remote->store().ahead_bytes(), 0u) << "every range fetched ahead was read once";
}

TEST_F(RemoteDataset, TheWindowIsFetchedAheadAndCoalesced) {
  auto local_dir = pack_local(dir_, 60, 1 << 20);
  ASSERT_TRUE(
      upload_dataset(local_dir, "s3://data/ahead", server_.settings(), {}, server_.credentials()));
  auto settings = server_.settings();
  settings.read_size = 1 << 20;
  auto remote = open_remote(server_, "s3://data/ahead", dataset_format::shards, settings);
  ASSERT_TRUE(remote);
  const auto before = remote->counters().snapshot().requests;
  std::vector<std::uint64_t> ids(remote->size());
  std::iota(ids.begin(), ids.end(), 0);
  remote->will_read(0, ids);  // the whole set in one window: consecutive records
  for (auto id : ids) {
    ASSERT_TRUE(remote->read(id));
  }
  const auto requests = remote->counters().snapshot().requests - before;
  EXPECT_LT(requests, ids.size() / 4) << "consecutive records must share range GETs";
  ASSERT_EQ(remote->counters().by_epoch().size(), 1u);
  EXPECT_EQ(remote->counters().by_epoch()[0].requests, requests);
  EXPECT_EQ(remote->store().ahead_bytes(), 0u) << "every range fetched ahead was read once";
}

TEST_F(RemoteDataset, WithACacheTheBlocksAreFetchedOnceAndLaterEpochsAskNothing) {
  auto local_dir = pack_local(dir_, 80, 1 << 20);
  ASSERT_TRUE(
      upload_dataset(local_dir, "s3://data/cached", server_.settings(), {}, server_.credentials()));
  auto settings = server_.settings();
  settings.read_size = 64 << 10;
  auto remote = open_remote(server_, "s3://data/cached", dataset_format::shards, settings);
  ASSERT_TRUE(remote);
  std::shared_ptr<minio_cache> cache = minio_cache::plan(*remote, 1ull << 30, 7);
  remote->use_cache(cache);
  std::uint64_t stored = 0;
  for (std::uint64_t id = 0; id < remote->size(); ++id) {
    stored += remote->stored_bytes(id);
  }
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::uint64_t> order(remote->size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(epoch));
    // As the readers do: a window handed out, then each sample from the cache or the store.
    for (std::size_t at = 0; at < order.size(); at += 16) {
      std::vector<std::uint64_t> window(
          order.begin() + static_cast<std::ptrdiff_t>(at),
          order.begin() + static_cast<std::ptrdiff_t>(std::min(at + 16, order.size())));
      remote->will_read(epoch, window);
      for (auto id : window) {
        if (cache->find(id)) {
          continue;
        }
        auto r = remote->read(id);
        ASSERT_TRUE(r) << r.error().what();
        cache->fill(id, *r);
      }
    }
  }
  auto epochs = remote->counters().by_epoch();
  ASSERT_EQ(epochs.size(), 1u) << "epochs 1 and 2 made requests";
  // Each block once: about the set's bytes (the blocks' gaps are other samples of the set).
  EXPECT_LE(epochs[0].bytes, stored + stored / 10);
  EXPECT_GE(epochs[0].bytes, stored);
  EXPECT_LT(epochs[0].requests, remote->size() / 2);
  EXPECT_EQ(cache->cached_samples(), remote->size());
}

TEST_F(RemoteDataset, VirtualHostAddressing) {
  if (server_.kind() != "moto") {
    GTEST_SKIP() << "s3rver answers virtual-host requests only under --service-endpoint";
  }
  auto local_dir = pack_local(dir_, 8, 64 << 10);
  ASSERT_TRUE(
      upload_dataset(local_dir, "s3://data/vhost", server_.settings(), {}, server_.credentials()));
  auto settings = server_.settings();
  settings.endpoint_url = "http://localhost:" + std::to_string(server_.port());
  settings.addressing = s3_addressing::virtual_host;  // data.localhost: loopback, by curl
  auto remote = open_remote(server_, "s3://data/vhost", dataset_format::shards, settings);
  ASSERT_TRUE(remote);
  auto local = open_sample_source(local_dir, dataset_format::shards);
  expect_same_records(**local, *remote);
}

TEST_F(RemoteDataset, MissingObjectsAreNamedWithTheServersCode) {
  auto local_dir = pack_local(dir_, 8, 64 << 10);
  auto no_bucket = open_remote_dataset("s3://no-such-bucket/set", dataset_format::shards,
                                       server_.settings(), 0, server_.credentials());
  ASSERT_FALSE(no_bucket);
  EXPECT_NE(no_bucket.error().message().find("s3://no-such-bucket/set/manifest.txt"),
            std::string::npos)
      << no_bucket.error().message();
  EXPECT_NE(no_bucket.error().message().find("NoSuchBucket"), std::string::npos);
  auto no_manifest = open_remote_dataset("s3://data/nothing-here", dataset_format::shards,
                                         server_.settings(), 0, server_.credentials());
  ASSERT_FALSE(no_manifest);
  EXPECT_NE(no_manifest.error().message().find("NoSuchKey"), std::string::npos);
  EXPECT_NE(no_manifest.error().message().find("no dataset manifest under s3://data/nothing-here"),
            std::string::npos)
      << no_manifest.error().message();
  // A manifest naming a shard that is not there.
  server_.put("data", "half/manifest.txt", testing::read_file(local_dir / "manifest.txt"));
  auto half = open_remote_dataset("s3://data/half", dataset_format::shards, server_.settings(), 0,
                                  server_.credentials());
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().message().find("s3://data/half/"), std::string::npos)
      << half.error().message();
  EXPECT_NE(half.error().message().find("NoSuchKey"), std::string::npos);
  auto no_tars = open_remote_dataset("s3://data/half", dataset_format::webdataset,
                                     server_.settings(), 0, server_.credentials());
  ASSERT_FALSE(no_tars);
  EXPECT_EQ(no_tars.error().code(), errc::empty_dataset);
}

// An object the store's listing says is 2^48 bytes long (it holds 1000): a range of it wanted
// ahead, for which no buffer can be had (more than the machine's memory), fails its own read,
// naming the object and the reason; the connection that took it lives on and answers the next read.
TEST_F(RemoteDataset, ARangeNoBufferCanHoldFailsItsReadAloneAndItsConnectionLivesOn) {
  server_.put("data", "blob", std::vector<std::uint8_t>(1000, 7));
  auto settings = server_.settings();
  settings.connections = 1;
  auto access = resolve_s3_access(settings, server_.credentials());
  ASSERT_TRUE(access) << access.error().what();
  const std::uint64_t claimed = std::uint64_t{1} << 48;
  auto store =
      remote_store::open("data", {{"blob", claimed}}, std::make_shared<const s3_access>(*access),
                         settings, std::make_shared<transfer_counters>(), 4 * claimed);
  ASSERT_EQ(store->want({{0, 0, claimed, fetch_priority::window}}, 0), 1u);
  std::vector<std::uint8_t> into(16);
  auto huge = store->read(0, 0, into.data(), into.size());  // takes the range wanted at 0
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message().find("s3://data/blob"), std::string::npos)
      << huge.error().message();
  EXPECT_NE(huge.error().message().find("more than this machine's memory"), std::string::npos)
      << huge.error().message();
  auto small = store->read(0, 100, into.data(), into.size());
  ASSERT_TRUE(small) << small.error().what();
  EXPECT_EQ(into, std::vector<std::uint8_t>(16, 7));
}

}  // namespace
}  // namespace conveyor

// conveyor-node and conveyor-pack with a dataset in object storage, against a real S3 server
// on a loopback port (support/s3_server.hpp): a set packed and uploaded by conveyor-pack --out
// s3://, trained from by the node, every sample once, later epochs served by the cache (memory,
// and the disk tier behind it) with no request; three nodes sharing their caches over it;
// every bad input stopping start-up with exit code 2, naming the URL and the
// server's error code, never the credentials; and a store that lies (answers rewritten by
// support/fault_proxy.hpp): a listing that never ends stops start-up, and a sample whose size
// no buffer can hold is quarantined by name while the others are delivered.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "support/cluster_nodes.hpp"
#include "support/fault_proxy.hpp"
#include "support/node_app.hpp"
#include "support/python_tars.hpp"
#include "support/s3_server.hpp"

namespace conveyor {
namespace {

using testing::json_array;
using testing::json_number;
using testing::run_app;
using testing::s3_server;
using testing::temp_dir;

constexpr int images = 48;

std::string s3_table(const std::string& endpoint) {
  return "[s3]\nendpoint_url = \"" + endpoint +
         "\"\nread_size = \"1M\"\nconnections = 4\nrequest_timeout_ms = 2000\nretries = 3\n"
         "backoff_ms = 5\n";
}

std::filesystem::path topology(const temp_dir& dir, const std::string& url,
                               const std::string& endpoint, const std::string& extra = "") {
  return testing::write_topology(
      dir, "gpus = 2\n[dataset]\npath = \"" + url +
               "\"\n[pipeline]\nbatch_size = 4\npreprocessors = 2\n[trainer]\nepochs = 3\n" +
               s3_table(endpoint) + extra +
               "[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
               "[[transform]]\nop = \"to_uint8\"\n");
}

class NodeS3 : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.make_bucket("train");
    env_ = server_.app_env(dir_.path().string());
  }
  // conveyor-pack --synthetic into s3://train/<prefix>.
  void pack(const std::string& prefix) {
    auto r =
        run_app(env_ + " " + CONVEYOR_PACK_BIN, dir_,
                "--synthetic " + std::to_string(images) + " --images " +
                    (dir_ / ("img-" + prefix)).string() + " --large-fraction 0 --out s3://train/" +
                    prefix + " --shard-size 2M --endpoint-url " + server_.endpoint());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("uploaded"), std::string::npos) << r.out;
  }
  testing::run_result node(const std::filesystem::path& file, const std::string& env = "",
                           const std::string& sets = "") {
    return run_app((env.empty() ? env_ : env) + " timeout 120 " + CONVEYOR_NODE_BIN, dir_,
                   "--topology " + file.string() + sets);
  }
  // The bytes of the images conveyor-pack packed into s3://train/<prefix>.
  std::uint64_t image_bytes(const std::string& prefix) const {
    std::uint64_t bytes = 0;
    for (const auto& f : std::filesystem::recursive_directory_iterator(dir_ / ("img-" + prefix))) {
      bytes += f.is_regular_file() ? f.file_size() : 0;
    }
    return bytes;
  }

  s3_server server_;
  temp_dir dir_;
  std::string env_;
};

TEST_F(NodeS3, PackedToTheStoreTrainedFromItEverySampleOnceLaterEpochsFromTheCache) {
  pack("set");
  auto r = node(topology(dir_, "s3://train/set", server_.endpoint(), "[cache]\nmemory = \"1G\"\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 3u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  EXPECT_EQ(json_number(r.out, "quarantined"), 0u);
  auto requests = json_array(r.out, "s3_requests");
  ASSERT_EQ(requests.size(), 1u) << "epochs 2 and 3 made requests: " << r.out;
  EXPECT_GT(requests[0], 0);
  EXPECT_LT(requests[0], images) << "the blocks of the cache are fetched whole";
  EXPECT_EQ(json_array(r.out, "cache_hits"), (std::vector<double>{0, images, images}));
  EXPECT_EQ(json_number(r.out, "s3_retries"), 0u);
  EXPECT_NE(r.err.find("s3://train/set: endpoint " + server_.endpoint()), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(testing::s3_test_secret), std::string::npos) << "a credential in the log";
}

TEST_F(NodeS3, WithoutACacheEveryEpochReadsTheStoreAndLosesNothing) {
  pack("plain");
  auto r = node(topology(dir_, "s3://train/plain", server_.endpoint()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 3u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  auto requests = json_array(r.out, "s3_requests");
  ASSERT_EQ(requests.size(), 3u) << r.out;
  for (double n : requests) {
    EXPECT_GT(n, 0);
  }
}

// dataset.shuffle = "blocks": a span of blocks is wanted at once, a span ahead, so each block is
// fetched whole (a range GET or two: one may straddle shards) and once per epoch, however small
// the window (the global shuffle's 8 samples at a time cost ~40 requests an epoch here); every
// sample still comes once per epoch. A block larger than every shard stops start-up naming the
// key.
TEST_F(NodeS3, InBlocksEachBlockIsFetchedWholeOncePerEpochAndNothingIsLost) {
  pack("blocks");
  const std::uint64_t block = 512u << 10;  // 8 blocks; 4 spans of 2
  const auto file = topology(dir_, "s3://train/blocks", server_.endpoint());
  auto r = node(file, "",
                " --set dataset.shuffle='\"blocks\"' --set dataset.shuffle_block='\"512K\"'"
                " --set dataset.shuffle_span=2 --set pipeline.window_samples=8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 3u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  EXPECT_EQ(json_number(r.out, "quarantined"), 0u);
  EXPECT_NE(r.err.find("dataset.shuffle = \"blocks\": blocks of"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\"shuffle\":\"blocks\""), std::string::npos) << r.out;
  EXPECT_EQ(json_number(r.out, "shuffle_span"), 2u);
  const auto set = static_cast<double>(image_bytes("blocks"));
  const auto blocks = std::ceil(set / static_cast<double>(block));
  const auto requests = json_array(r.out, "s3_requests");
  const auto mb = json_array(r.out, "s3_mb");
  ASSERT_EQ(requests.size(), 3u) << r.out;
  for (std::size_t e = 0; e < 3; ++e) {
    EXPECT_LE(requests[e], 2 * blocks) << "epoch " << e << " of " << blocks << " blocks: " << r.out;
    // Records add a few bytes to each image; a block fetched twice would add a block's worth.
    EXPECT_LE(mb[e] * 1e6, set * 1.05 + 4096) << "epoch " << e << ": " << r.out;
  }
  auto too_big =
      node(file, "", " --set dataset.shuffle='\"blocks\"' --set dataset.shuffle_block='\"64M\"'");
  EXPECT_EQ(too_big.exit_code, 2) << too_big.err;
  EXPECT_NE(too_big.err.find("dataset.shuffle_block (67108864 bytes) is larger than the "
                             "dataset's largest shard"),
            std::string::npos)
      << too_big.err;
}

// The disk tier behind a memory tier too small for the set: the store is read in the first
// epoch only; later epochs come from memory and disk between them, both used.
TEST_F(NodeS3, TheDiskTierKeepsWhatMemoryCannotAndLaterEpochsAskNothing) {
  pack("tiers");
  auto disk = dir_ / "disk";
  std::filesystem::create_directories(disk);
  auto r = node(topology(
      dir_, "s3://train/tiers", server_.endpoint(),
      "[cache]\nmemory = \"512K\"\ndisk = \"" + disk.string() + "\"\ndisk_size = \"64M\"\n"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 3u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  ASSERT_EQ(json_array(r.out, "s3_requests").size(), 1u) << "later epochs made requests: " << r.out;
  // cache_hits counts both tiers' hits, disk_hits those of the disk tier.
  const auto hits = json_array(r.out, "cache_hits");
  const auto on_disk = json_array(r.out, "disk_hits");
  ASSERT_EQ(hits.size(), 3u) << r.out;
  ASSERT_EQ(on_disk.size(), 3u) << r.out;
  for (std::size_t e = 1; e < 3; ++e) {
    EXPECT_EQ(hits[e], images) << r.out;
    EXPECT_GT(on_disk[e], 0) << r.out;
    EXPECT_LT(on_disk[e], images) << "memory held none: " << r.out;
  }
}

// The partitioned cache across nodes, unchanged over a set in the store: three nodes started
// together deliver every sample once per epoch and fetch from each other; by the last epoch
// the store is read only for a peer that already ended its run.
TEST_F(NodeS3, ThreeNodesShareTheirCachesOverTheStore) {
  pack("shared");
  auto credentials = server_.credentials();
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
    ::setenv(name, credentials(name), 1);
  }
  for (const char* name : {"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"}) {
    ::unsetenv(name);
  }
  auto ports = testing::free_tcp_ports(3);
  auto file =
      testing::cluster_topology(dir_, "s3://train/shared", testing::loopback(ports),
                                "peer_wait_s = 60\n" + s3_table(server_.endpoint()), "shards");
  std::vector<std::unique_ptr<testing::node_process>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    nodes.push_back(testing::start_node(dir_, file, rank));
  }
  testing::epoch_ids all;
  for (int rank = 0; rank < 3; ++rank) {
    auto& node = *nodes[static_cast<std::size_t>(rank)];
    ASSERT_EQ(node.finish(std::chrono::seconds(240)), 0) << node.err();
    const auto& out = node.out();
    EXPECT_EQ(json_number(out, "lost"), 0u) << out;
    EXPECT_EQ(json_number(out, "epoch_samples"), images / 3u) << out;
    EXPECT_GT(testing::sum(json_array(out, "peer_fetches")), 0) << "rank " << rank << ": " << out;
    EXPECT_GT(testing::sum(json_array(out, "s3_requests")), 0) << "rank " << rank << ": " << out;
    auto reads = json_array(out, "storage_reads");
    auto fallbacks = json_array(out, "peer_fallbacks");
    ASSERT_FALSE(reads.empty()) << out;
    ASSERT_EQ(reads.size(), fallbacks.size()) << out;
    EXPECT_EQ(reads.back(), fallbacks.back()) << "rank " << rank << ": " << out;
    testing::merge_into(all, testing::read_ids_file(testing::ids_of(dir_, rank)));
  }
  ASSERT_EQ(all.size(), static_cast<std::size_t>(testing::cluster_epochs));
  testing::expect_each_sample_once(all, images, testing::cluster_epochs);
}

// A start that must fail: exit 2, the URL and `code` in the message, no credential anywhere.
void expect_refused(const testing::run_result& r, const std::string& url, const std::string& code,
                    const std::vector<std::string>& secrets) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(url), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(code), std::string::npos) << r.err;
  for (const auto& secret : secrets) {
    EXPECT_EQ(r.err.find(secret), std::string::npos) << "a credential in: " << r.err;
    EXPECT_EQ(r.out.find(secret), std::string::npos) << "a credential in: " << r.out;
  }
}

TEST_F(NodeS3, BadAddressesStopStartUpNamingTheUrlAndTheServersCode) {
  pack("good");
  const std::vector<std::string> secrets = {testing::s3_test_secret};
  expect_refused(node(topology(dir_, "s3://no-such-bucket/set", server_.endpoint())),
                 "s3://no-such-bucket/set/manifest.txt", "NoSuchBucket", secrets);
  auto no_manifest = node(topology(dir_, "s3://train/empty-prefix", server_.endpoint()));
  expect_refused(no_manifest, "s3://train/empty-prefix/manifest.txt", "NoSuchKey", secrets);
  EXPECT_NE(no_manifest.err.find("no dataset manifest"), std::string::npos) << no_manifest.err;
  // A manifest that names shards that are not there.
  server_.put("train", "orphan/manifest.txt", server_.get("train", "good/manifest.txt"));
  expect_refused(node(topology(dir_, "s3://train/orphan", server_.endpoint())),
                 "s3://train/orphan/shard-", "NoSuchKey", secrets);
  // WebDataset tars under a prefix that holds record shards.
  auto no_tars =
      run_app(env_ + " timeout 120 " + CONVEYOR_NODE_BIN, dir_,
              "--topology " + topology(dir_, "s3://train/good", server_.endpoint()).string() +
                  " --set dataset.format=\\\"webdataset\\\"");
  expect_refused(no_tars, "s3://train/good", "no .tar objects", secrets);
  // Settings that are no endpoint, and an address that is no bucket.
  expect_refused(node(topology(dir_, "s3://train/good", "ftp://127.0.0.1:1")), "ftp://127.0.0.1:1",
                 "s3.endpoint_url", secrets);
  expect_refused(node(topology(dir_, "s3://UPPER/good", server_.endpoint())), "s3://UPPER/good",
                 "is not a bucket name", secrets);
}

TEST_F(NodeS3, WrongCredentialsAreRefusedWithoutShowingThem) {
  s3_server checking(true);  // refuses every key
  if (checking.kind() != "moto") {
    GTEST_SKIP() << "moto checks keys only when told; s3rver checks signatures";
  }
  const std::string key = "AKIAWRONGKEY0000TEST";
  const std::string secret = "wrong-secret-Zq9vXk2";
  auto env = "env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=" + key +
             " AWS_SECRET_ACCESS_KEY=" + secret + " HOME=" + dir_.path().string();
  auto r = node(topology(dir_, "s3://train/set", checking.endpoint()), env);
  expect_refused(r, "s3://train/set/manifest.txt", "InvalidAccessKeyId", {key, secret});
  EXPECT_NE(r.err.find("HTTP 403"), std::string::npos) << r.err;
  // No credentials at all: where the node looked.
  auto none = node(topology(dir_, "s3://train/set", checking.endpoint()),
                   "env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE HOME=" +
                       dir_.path().string());
  expect_refused(none, "s3://train/set", "no AWS credentials", {key, secret});
}

TEST_F(NodeS3, AServerThatAnswersGarbageIsNamedNeverAHang) {
  testing::proxy_faults faults;
  faults.garbage = true;
  testing::fault_proxy garbage(server_.port(), faults);
  auto endpoint = "http://127.0.0.1:" + std::to_string(garbage.port());
  auto r = node(topology(dir_, "s3://train/set", endpoint));
  expect_refused(r, "s3://train/set/manifest.txt", "an answer that is not HTTP",
                 {testing::s3_test_secret});
}

// A node over WebDataset tars at `url` through `proxy`, with `extra` (TOML, after [s3]) and
// `sets` (more of the command line).
testing::run_result webdataset_node(const temp_dir& dir, const std::string& env,
                                    const std::string& url, const testing::fault_proxy& proxy,
                                    const std::string& extra = "", const std::string& sets = "") {
  const auto file = topology(dir, url, "http://127.0.0.1:" + std::to_string(proxy.port()), extra);
  return run_app(
      env + " timeout 120 " + CONVEYOR_NODE_BIN, dir,
      "--topology " + file.string() + " --set dataset.format=\\\"webdataset\\\" " + sets);
}

TEST_F(NodeS3, AListingThatRepeatsItselfStopsStartUpNamingThePage) {
  testing::proxy_faults faults;
  faults.rewrite = testing::repeating_listing({{"wds/a.tar", 10240}});
  testing::fault_proxy proxy(server_.port(), faults);
  auto r = webdataset_node(dir_, env_, "s3://train/wds", proxy);
  expect_refused(r, "s3://train/wds/", "page 2", {testing::s3_test_secret});
  EXPECT_NE(r.err.find("continuation token"), std::string::npos) << r.err;
}

// A tar cut after the header of a member of 2^48 bytes, listed by a store that says the tar is
// that long: the walk finds the member whole, and a reader would size its sample's buffer by
// it. (The tar's bytes run on in zeros, the start of that member's data, to a whole number of
// the blocks its headers are walked in, s3.read_size: the walk reads only bytes the object
// has, and a store's answer for a block past its end would fail the opening.) That sample is
// quarantined, named, every epoch; the others are delivered; no reader dies. Refused before a
// buffer is sized by default (more than s3.prefetch_bytes allows in flight), and, with a bound
// that allows it, as more than the machine's memory (never by trying: under ASan a failed
// allocation aborts the process).
TEST_F(NodeS3, ASampleNoBufferCanHoldIsQuarantinedByNameAndNoReaderDies) {
  std::vector<std::filesystem::path> jpegs;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(testing::make_image_folder(dir_, 2))) {
    if (entry.is_regular_file()) {
      jpegs.push_back(entry.path());
    }
  }
  ASSERT_EQ(jpegs.size(), 2u);
  const auto tar = dir_ / "huge.tar";
  testing::pack_with_python(dir_, tar, {{"k0.jpg", jpegs[0]}, {"k1.jpg", jpegs[1]}});
  const std::uint64_t claimed = std::uint64_t{1} << 48;
  testing::cut_after_header(dir_, tar, "k2.jpg", claimed);
  auto bytes = testing::read_file(tar);
  const auto header_end = bytes.size();
  constexpr std::size_t block = 64 << 10;  // s3.read_size below
  bytes.resize((header_end + block - 1) / block * block);
  server_.put("train", "lie/huge.tar", bytes);
  const auto real_size = "<Size>" + std::to_string(bytes.size()) + "</Size>";
  const auto lie = "<Size>" + std::to_string(header_end + claimed) + "</Size>";
  testing::proxy_faults faults;
  faults.rewrite = [&](const std::string& request, testing::proxy_answer& a) {
    if (testing::is_listing(request) && a.body.find(real_size) != std::string::npos) {
      auto body = a.body;
      set_body(a, body.replace(body.find(real_size), real_size.size(), lie));
    }
  };
  testing::fault_proxy proxy(server_.port(), faults);
  for (const std::string prefetch : {"", "1024T"}) {
    auto r = webdataset_node(
        dir_, env_, "s3://train/lie", proxy, "[supervision]\nmax_sample_retries = 0\n",
        "--set s3.read_size=\\\"64K\\\"" +
            (prefetch.empty() ? "" : " --set s3.prefetch_bytes=\\\"" + prefetch + "\\\""));
    ASSERT_EQ(r.exit_code, 0) << "prefetch_bytes " << prefetch << ": " << r.err;
    EXPECT_EQ(json_number(r.out, "samples"), 3u * 2);
    EXPECT_EQ(json_number(r.out, "quarantined"), 3u);
    EXPECT_EQ(json_number(r.out, "lost"), 0u);
    EXPECT_EQ(json_number(r.out, "restarts"), 0u) << r.err;
    EXPECT_NE(r.err.find("s3://train/lie/huge.tar key k2"), std::string::npos) << r.err;
    EXPECT_NE(
        r.err.find(prefetch.empty() ? "s3.prefetch_bytes" : "more than this machine's memory"),
        std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace conveyor

// Nodes whose caches serve each other's misses over CAF's network layer (the partitioned
// cache, [cluster] peers), as operators run them: real conveyor-node processes on loopback,
// started together. Three nodes deliver every sample exactly once per epoch between them and
// fetch from each other (counted); a node killed mid-run leaves the others to finish their
// shares without hanging, naming the peer that failed; a peer that disagrees on the run is
// refused by name; TLS with certificates made here by openssl; a port taken stops start-up.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <csignal>
#include <memory>
#include <set>

#include "core/base/unique_fd.hpp"
#include "support/cluster_nodes.hpp"

namespace conveyor {
namespace {

using testing::cluster_topology;
using testing::ids_of;
using testing::json_array;
using testing::json_number;
using testing::loopback;
using testing::make_certificates;
using testing::node_process;
using testing::start_node;
using testing::sum;
using testing::temp_dir;
using testing::tls_args;

constexpr std::uint64_t images = 60;
constexpr int epochs = testing::cluster_epochs;

TEST(NodePeers, ThreeNodesFetchFromEachOtherAndDeliverEverySampleOnce) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto ports = testing::free_tcp_ports(3);
  auto file = cluster_topology(dir, folder, loopback(ports));
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    nodes.push_back(start_node(dir, file, rank));
  }
  testing::cluster_logs_on_failure logs(nodes);
  testing::epoch_ids all;
  for (int rank = 0; rank < 3; ++rank) {
    auto& node = *nodes[static_cast<std::size_t>(rank)];
    ASSERT_EQ(node.finish(std::chrono::seconds(240)), 0) << node.err();
    const auto& out = node.out();
    EXPECT_EQ(json_number(out, "lost"), 0u) << out;
    EXPECT_EQ(json_number(out, "epoch_samples"), images / 3) << out;
    EXPECT_GT(sum(json_array(out, "peer_fetches")), 0) << "rank " << rank << ": " << out;
    EXPECT_GT(sum(json_array(out, "peer_served")), 0) << "rank " << rank << ": " << out;
    // Each sample is read from storage once by the node that caches it, whichever node asks
    // for it first and however far the nodes' epochs drift apart; every other storage read
    // is a fallback (a peer that had ended its run).
    auto reads = json_array(out, "storage_reads");
    auto fallbacks = json_array(out, "peer_fallbacks");
    ASSERT_EQ(reads.size(), static_cast<std::size_t>(epochs)) << out;
    ASSERT_EQ(fallbacks.size(), static_cast<std::size_t>(epochs)) << out;
    EXPECT_LE(sum(reads) - sum(fallbacks), json_number(out, "cached_samples"))
        << "rank " << rank << ": " << out;
    EXPECT_NE(out.find("\"failed_peers\":[]"), std::string::npos) << out;
    EXPECT_NE(node.err().find("every peer answered; reading starts"), std::string::npos)
        << node.err();
    // Without TLS and a secret, the node says what it cannot protect against.
    EXPECT_NE(node.err().find("plain TCP between the nodes on loopback"), std::string::npos)
        << node.err();
    EXPECT_NE(node.err().find("ranks are taken on their word"), std::string::npos) << node.err();
    for (const auto& [e, got] : testing::read_ids_file(ids_of(dir, rank))) {
      all[e].insert(got.begin(), got.end());
    }
  }
  ASSERT_EQ(all.size(), static_cast<std::size_t>(epochs));
  for (const auto& [e, got] : all) {
    for (std::uint64_t id = 0; id < images; ++id) {
      EXPECT_EQ(got.count(id), 1u) << "epoch " << e << " sample " << id;
    }
  }
}

TEST(NodePeers, ANodeKilledMidRunLeavesTheOthersToFinishAndNamesIt) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto ports = testing::free_tcp_ports(3);
  // Slow trainers: the run lasts seconds, and the kill lands in its middle.
  auto file =
      cluster_topology(dir, folder, loopback(ports), "peer_retry_ms = 200\npeer_wait_s = 60\n");
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    nodes.push_back(start_node(dir, file, rank, {"--set", "trainer.step_ms=60"}));
  }
  testing::cluster_logs_on_failure logs(nodes);
  // Every node has reached every other, and rank 1 reports its fetches: it is mid-run.
  for (const auto& node : nodes) {
    ASSERT_TRUE(node->wait_for_log("every peer answered", std::chrono::seconds(120)))
        << node->err();
  }
  ASSERT_TRUE(nodes[1]->wait_for_log("peer_fetches=", std::chrono::seconds(120)))
      << nodes[1]->err();
  nodes[1]->signal(SIGKILL);
  const auto dead = "127.0.0.1:" + std::to_string(ports[1]) + " (rank 1)";
  double fallbacks = 0;
  for (int rank : {0, 2}) {
    auto& node = *nodes[static_cast<std::size_t>(rank)];
    ASSERT_EQ(node.finish(std::chrono::seconds(240)), 0) << node.err();
    const auto& out = node.out();
    EXPECT_EQ(json_number(out, "lost"), 0u) << out;
    EXPECT_NE(out.find("\"failed_peers\":[\"" + dead + ": connection lost"), std::string::npos)
        << out;
    EXPECT_NE(node.err().find(dead + " went down"), std::string::npos) << node.err();
    fallbacks += sum(json_array(out, "peer_fallbacks"));
    // Its own share, each sample once per epoch.
    auto ids = testing::read_ids_file(ids_of(dir, rank));
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(epochs));
    for (const auto& [e, got] : ids) {
      EXPECT_EQ(got.size(), images / 3) << "rank " << rank << " epoch " << e;
      EXPECT_EQ(std::set<std::uint64_t>(got.begin(), got.end()).size(), got.size());
    }
  }
  EXPECT_GT(fallbacks, 0);  // rank 1's samples came from storage after it died
}

TEST(NodePeers, APeerOfAnotherRunIsRefusedByName) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, loopback(ports));
  auto a = start_node(dir, file, 0);
  auto b = start_node(dir, file, 1, {"--set", "dataset.seed=6"});
  for (auto* node : {a.get(), b.get()}) {
    ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
    EXPECT_EQ(sum(json_array(node->out(), "peer_fetches")), 0) << node->out();
    EXPECT_NE(node->out().find("refused: another dataset.seed"), std::string::npos) << node->out();
    EXPECT_NE(node->err().find("is not used: another dataset.seed"), std::string::npos)
        << node->err();
  }
}

TEST(NodePeers, NodesWithCertificatesTalkTlsAndAStrangerIsNotServed) {
  temp_dir dir;
  make_certificates(dir, "ours");
  make_certificates(dir, "theirs");
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, loopback(ports), "peer_wait_s = 3\n");
  {
    auto a = start_node(dir, file, 0, tls_args(dir, "ours", "ours"));
    auto b = start_node(dir, file, 1, tls_args(dir, "ours", "ours"));
    for (auto* node : {a.get(), b.get()}) {
      ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
      EXPECT_GT(sum(json_array(node->out(), "peer_fetches")), 0) << node->out();
      EXPECT_NE(node->err().find("for its peers (TLS)"), std::string::npos) << node->err();
    }
  }
  // A node whose certificate another authority signed never gets a sample.
  auto a = start_node(dir, file, 0, tls_args(dir, "ours", "ours"));
  auto b = start_node(dir, file, 1, tls_args(dir, "theirs", "theirs"));
  for (auto* node : {a.get(), b.get()}) {
    ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
    EXPECT_EQ(sum(json_array(node->out(), "peer_fetches")), 0) << node->out();
    EXPECT_NE(node->out().find("never reached"), std::string::npos) << node->out();
    EXPECT_EQ(json_number(node->out(), "lost"), 0u);
  }
}

TEST(NodePeers, APortTakenOrAMissingCacheStopsStartUpWithExitTwo) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 10);
  const auto taken = testing::tcp_listen();  // held from the start: no other test can take it
  ASSERT_TRUE(taken.first);
  const std::vector<std::uint16_t> ports = {taken.second, testing::free_tcp_ports(1).at(0)};
  auto file = cluster_topology(dir, folder, loopback(ports));
  auto busy = testing::run_node(dir, "--topology " + file.string() + " --set cluster.rank=0");
  EXPECT_EQ(busy.exit_code, 2);
  EXPECT_NE(busy.err.find("cluster.peers[0] 127.0.0.1:" + std::to_string(ports[0]) +
                          ": this node cannot listen there"),
            std::string::npos)
      << busy.err;
  auto no_cache = testing::run_node(
      dir, "--topology " + file.string() + " --set cluster.rank=1 --set cache.memory=\\\"\\\"");
  EXPECT_EQ(no_cache.exit_code, 2);
  EXPECT_NE(no_cache.err.find("cluster.peers: the nodes serve each other's cache misses, but "
                              "this node has no cache"),
            std::string::npos)
      << no_cache.err;
  auto wide = testing::run_node(
      dir, "--topology " + file.string() + " --set cluster.rank=1 --set cluster.world=3");
  EXPECT_EQ(wide.exit_code, 2);
  EXPECT_NE(wide.err.find("cluster.peers"), std::string::npos) << wide.err;
}

}  // namespace
}  // namespace conveyor

// Nodes whose caches serve each other's misses over CAF's network layer (the partitioned
// cache, [cluster] peers), as operators run them: real conveyor-node processes on loopback,
// started together. Three nodes deliver every sample exactly once per epoch between them and
// fetch from each other (counted); a node killed mid-run leaves the others to finish their
// shares without hanging, naming the peer that failed; a peer that disagrees on the run is
// refused by name; TLS with certificates made here by openssl; a port taken stops start-up.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <csignal>
#include <memory>
#include <numeric>
#include <set>

#include "core/base/unique_fd.hpp"
#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::json_array;
using testing::json_number;
using testing::node_process;
using testing::temp_dir;

constexpr std::uint64_t images = 60;
constexpr int epochs = 3;

// "peers = [...]" for nodes on `ports` of the loopback interface.
std::string peers_key(const std::vector<std::uint16_t>& ports) {
  std::string out = "peers = [";
  for (std::size_t i = 0; i < ports.size(); ++i) {
    out += (i == 0 ? "\"" : ", \"") + std::string("127.0.0.1:") + std::to_string(ports[i]) + "\"";
  }
  return out + "]\n";
}

// The topology every node of a cluster of `ports.size()` nodes shares; `cluster` adds keys to
// [cluster]. A cache that alone could hold the set: together, the nodes' partitions cover it.
std::filesystem::path cluster_topology(const temp_dir& dir, const std::filesystem::path& folder,
                                       const std::vector<std::uint16_t>& ports,
                                       const std::string& cluster = "peer_wait_s = 60\n") {
  return testing::write_topology(
      dir, "gpus = 1\n[dataset]\npath = \"" + folder.string() +
               "\"\nformat = \"folder\"\nseed = 5\n"
               "[pipeline]\nbatch_size = 2\npreprocessors = 1\n"
               "[trainer]\nstep_ms = 10\nepochs = " +
               std::to_string(epochs) +
               "\n[monitor]\ninterval_ms = 50\n"
               "[cache]\nmemory = \"1G\"\n"
               "[cluster]\nworld = " +
               std::to_string(ports.size()) + "\n" + peers_key(ports) +
               // Generous: a loaded CI machine must not turn a slow answer into a fallback.
               "peer_timeout_ms = 10000\n" + cluster +
               "[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
               "[[transform]]\nop = \"to_uint8\"\n");
}

std::filesystem::path ids_of(const temp_dir& dir, int rank) {
  return dir / ("ids-" + std::to_string(rank));
}

// Node `rank` of the cluster of `file`, with `extra` arguments.
std::unique_ptr<node_process> start_node(const temp_dir& dir, const std::filesystem::path& file,
                                         int rank, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--topology", file.string(),
                                "--set",      "cluster.rank=" + std::to_string(rank),
                                "--set",      "trainer.ids_file=" + ids_of(dir, rank).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<node_process>(std::move(args));
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

TEST(NodePeers, ThreeNodesFetchFromEachOtherAndDeliverEverySampleOnce) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  auto ports = testing::free_tcp_ports(3);
  auto file = cluster_topology(dir, folder, ports);
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    nodes.push_back(start_node(dir, file, rank));
  }
  testing::epoch_ids all;
  for (int rank = 0; rank < 3; ++rank) {
    auto& node = *nodes[static_cast<std::size_t>(rank)];
    ASSERT_EQ(node.finish(std::chrono::seconds(240)), 0) << node.err();
    const auto& out = node.out();
    EXPECT_EQ(json_number(out, "lost"), 0u) << out;
    EXPECT_EQ(json_number(out, "epoch_samples"), images / 3) << out;
    EXPECT_GT(sum(json_array(out, "peer_fetches")), 0) << "rank " << rank << ": " << out;
    EXPECT_GT(sum(json_array(out, "peer_served")), 0) << "rank " << rank << ": " << out;
    // By the last epoch every sample is cached by its holder: storage is read only for a
    // peer that already ended its run.
    auto reads = json_array(out, "storage_reads");
    auto fallbacks = json_array(out, "peer_fallbacks");
    ASSERT_EQ(reads.size(), static_cast<std::size_t>(epochs)) << out;
    ASSERT_EQ(fallbacks.size(), static_cast<std::size_t>(epochs)) << out;
    EXPECT_EQ(reads.back(), fallbacks.back()) << "rank " << rank << ": " << out;
    EXPECT_NE(out.find("\"failed_peers\":[]"), std::string::npos) << out;
    EXPECT_NE(node.err().find("every peer answered; reading starts"), std::string::npos)
        << node.err();
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
  auto file = cluster_topology(dir, folder, ports, "peer_retry_ms = 200\npeer_wait_s = 60\n");
  std::vector<std::unique_ptr<node_process>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    nodes.push_back(start_node(dir, file, rank, {"--set", "trainer.step_ms=60"}));
  }
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
  auto file = cluster_topology(dir, folder, ports);
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

// A certificate authority and a node certificate it signed, in `dir` (openssl's command line).
void make_certificates(const temp_dir& dir, const std::string& name) {
  auto run = [&](const std::string& cmd) {
    ASSERT_EQ(std::system((cmd + " 2>/dev/null >/dev/null").c_str()), 0) << cmd;
  };
  auto at = [&](const std::string& file) { return (dir / (name + file)).string(); };
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name + "-ca -keyout " +
      at("-ca.key") + " -out " + at("-ca.pem"));
  run("openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + at(".key") + " -out " +
      at(".csr"));
  run("openssl x509 -req -days 2 -in " + at(".csr") + " -CA " + at("-ca.pem") + " -CAkey " +
      at("-ca.key") + " -CAcreateserial -out " + at(".pem"));
}

std::vector<std::string> tls_args(const temp_dir& dir, const std::string& name,
                                  const std::string& ca) {
  return {"--set", "cluster.tls_certificate=" + (dir / (name + ".pem")).string(),
          "--set", "cluster.tls_key=" + (dir / (name + ".key")).string(),
          "--set", "cluster.tls_cafile=" + (dir / (ca + "-ca.pem")).string()};
}

TEST(NodePeers, NodesWithCertificatesTalkTlsAndAStrangerIsNotServed) {
  temp_dir dir;
  make_certificates(dir, "ours");
  make_certificates(dir, "theirs");
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, ports, "peer_wait_s = 3\n");
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
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, ports);
  unique_fd taken(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(ports[0]);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(taken.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(taken.get(), 1), 0);
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

// What reaches a cluster node's peer port before any Conveyor message is read (issue 28, item
// 7). CAF 0.17 allocates whatever payload length a BASP header announces, with no bound
// (libcaf_io/src/io/basp_broker.cpp:145-147, libcaf_io/src/io/network/stream.cpp:118-133 in
// the 0.17.6 tag), so a node refuses plain TCP beyond loopback unless cluster.insecure is set,
// warns on loopback, and relies on TLS: shown here with real conveyor-node processes and raw
// TCP clients that announce large payloads.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/base/unique_fd.hpp"
#include "core/cluster/tcp_probe.hpp"
#include "support/cluster_nodes.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::cluster_topology;
using testing::json_array;
using testing::loopback;
using testing::resident_bytes;
using testing::start_node;
using testing::sum;
using testing::temp_dir;

constexpr std::uint64_t mib = 1024 * 1024;

// A TCP connection to 127.0.0.1:`port` whose reads give up after `limit`.
unique_fd connect_to(std::uint16_t port, std::chrono::seconds limit) {
  auto fd = testing::tcp_connect(port);
  EXPECT_TRUE(fd);
  timeval t{static_cast<time_t>(limit.count()), 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  return fd;
}

// A BASP client handshake header (libcaf_io/caf/io/basp/header.hpp, 32 bytes in network
// order: operation, two pads, flags, payload_len, operation_data, source and dest actor)
// that announces a payload of `bytes`: what a stranger can send first.
void announce_payload(const unique_fd& fd, std::uint32_t bytes) {
  std::array<std::uint8_t, 32> header{};
  header[0] = 0x01;  // client_handshake: valid with source and dest actor 0
  const auto length = htonl(bytes);
  std::memcpy(header.data() + 4, &length, sizeof length);
  ASSERT_EQ(send(fd.get(), header.data(), header.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(header.size()));
}

// Reads until the node closes the connection (true), or the read times out (false).
bool closed_by_node(const unique_fd& fd) {
  std::array<char, 4096> buffer{};
  for (;;) {
    auto n = recv(fd.get(), buffer.data(), buffer.size(), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return false;  // timed out: still open
    }
  }
}

// Waits until `pid` holds at least `bytes` resident, at most `limit`: true when it does.
bool grows_to(pid_t pid, std::uint64_t bytes, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (resident_bytes(pid) < bytes) {
    if (std::chrono::steady_clock::now() > until) {
      return false;
    }
    std::this_thread::sleep_for(10ms);  // polling /proc: no event says a page was touched
  }
  return true;
}

TEST(NodePeerTransport, PeersBeyondLoopbackWithoutTlsStopStartUpUnlessInsecure) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 10);
  auto ports = testing::free_tcp_ports(1);
  // 192.0.2.1 (TEST-NET-1): beyond this machine, and never answers.
  auto file =
      cluster_topology(dir, folder, {"127.0.0.1:" + std::to_string(ports[0]), "192.0.2.1:7100"});
  auto refused = testing::run_node(dir, "--topology " + file.string() + " --set cluster.rank=0");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("cluster.peers: 192.0.2.1:7100 is not a loopback address, and the "
                             "nodes would talk plain TCP"),
            std::string::npos)
      << refused.err;
  auto accepted = testing::run_node(
      dir, "--topology " + file.string() +
               " --set cluster.rank=0 --set cluster.insecure=true --set cluster.peer_wait_s=0"
               " --set cluster.peer_timeout_ms=200");
  EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_NE(accepted.err.find("plain TCP between the nodes beyond this machine (cluster.insecure "
                              "= true): anyone who reaches this machine can connect to port " +
                              std::to_string(ports[0]) +
                              " and make this node allocate up to 4 "
                              "GiB per connection"),
            std::string::npos)
      << accepted.err;
}

TEST(NodePeerTransport, OnLoopbackWithoutTlsTheNodeBindsItsOwnHostWarnsAndCafAllocates) {
  temp_dir dir;
  auto folder = testing::make_image_folder(dir, 10);
  auto ports = testing::free_tcp_ports(2);
  auto node =
      start_node(dir, cluster_topology(dir, folder, loopback(ports)), 0);  // waits for rank 1
  ASSERT_TRUE(node->wait_for_log("listens at", 60s)) << node->err();
  EXPECT_NE(node->err().find("plain TCP between the nodes on loopback: any local process can "
                             "connect to port " +
                             std::to_string(ports[0])),
            std::string::npos)
      << node->err();
  EXPECT_NE(node->err().find("TLS (cluster.tls_certificate, tls_key and tls_cafile, every node "
                             "holding a certificate of the authority) is the only protection"),
            std::string::npos)
      << node->err();
  // The port is bound on the host of the node's own entry in cluster.peers, not on every
  // interface: 127.0.0.2 is this machine too, but nothing listens there.
  EXPECT_TRUE(tcp_probe({"127.0.0.1", ports[0]}, 5000ms));
  EXPECT_FALSE(tcp_probe({"127.0.0.2", ports[0]}, 5000ms));
  // Why TLS is needed: one header from a stranger, and CAF allocates (and zeroes) the payload
  // it announces before reading a byte of it.
  const auto before = resident_bytes(node->pid());
  ASSERT_GT(before, 0u);
  auto stranger = connect_to(ports[0], 30s);
  announce_payload(stranger, 256 * mib);
  EXPECT_TRUE(grows_to(node->pid(), before + 200 * mib, 60s))
      << "resident " << resident_bytes(node->pid()) / mib << " MiB, from " << before / mib;
}

TEST(NodePeerTransport, WithTlsAnnouncedPayloadsAreNotAllocatedAndHonestPeersAreServed) {
  temp_dir dir;
  testing::make_certificates(dir, "ours");
  auto folder = testing::make_image_folder(dir, 20);
  auto ports = testing::free_tcp_ports(2);
  auto file = cluster_topology(dir, folder, loopback(ports));
  auto tls = testing::tls_args(dir, "ours", "ours");
  auto first = start_node(dir, file, 0, tls);  // waits for rank 1
  ASSERT_TRUE(first->wait_for_log("listens at", 60s)) << first->err();
  const auto before = resident_bytes(first->pid());
  ASSERT_GT(before, 0u);
  // Three strangers announce 1 GiB each (plain TCP raised a node to 2.9 GB so): the TLS
  // handshake fails first and the node closes each connection.
  for (int i = 0; i < 3; ++i) {
    auto stranger = connect_to(ports[0], 60s);
    announce_payload(stranger, 1024 * mib);
    EXPECT_TRUE(closed_by_node(stranger)) << "connection " << i << " still open";
  }
  const auto after = resident_bytes(first->pid());
  EXPECT_LT(after, before + 64 * mib) << after / mib << " MiB resident, from " << before / mib;
  // And it still serves its honest peer.
  auto second = start_node(dir, file, 1, tls);
  for (auto* node : {first.get(), second.get()}) {
    ASSERT_EQ(node->finish(std::chrono::seconds(240)), 0) << node->err();
    EXPECT_GT(sum(json_array(node->out(), "peer_fetches")), 0) << node->out();
    EXPECT_NE(node->out().find("\"failed_peers\":[]"), std::string::npos) << node->out();
    EXPECT_EQ(node->err().find("plain TCP between the nodes"), std::string::npos) << node->err();
  }
}

}  // namespace
}  // namespace conveyor

// What a node knows of its peers (core/cluster/peer_health.hpp) as plain code with the clock
// passed in: who may be asked when, what start-up waits for, and what the run's report says
// about each peer that failed; how a peer's pace rests it (core/cluster/peer_pace.hpp); and
// the addresses of cluster.peers; the probe connections and how long they are held.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <memory>
#include <utility>

#include "core/base/unique_fd.hpp"
#include "core/cluster/held_probes.hpp"
#include "core/cluster/peer_health.hpp"
#include "core/cluster/peer_pace.hpp"
#include "core/cluster/tcp_probe.hpp"
#include "support/loopback_tcp.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

std::vector<peer_address> three_nodes() {
  return {{"127.0.0.1", 7100}, {"127.0.0.1", 7101}, {"node-c", 7102}};
}

TEST(PeerHealth, OnlyPeersThatAreUpAndNotBackingOffAreAsked) {
  peer_health h(three_nodes(), 0, 2000ms, 1000ms);
  auto t0 = peer_health::clock::now();
  EXPECT_FALSE(h.usable(1, t0));  // not connected yet
  EXPECT_FALSE(h.usable(0, t0));  // itself
  h.connected(1);
  EXPECT_TRUE(h.usable(1, t0));
  h.timed_out(1, t0);
  EXPECT_FALSE(h.usable(1, t0 + 1999ms));
  EXPECT_TRUE(h.usable(1, t0 + 2000ms));
  h.connected(0);  // itself: ignored
  EXPECT_FALSE(h.usable(0, t0));
  EXPECT_FALSE(h.usable(7, t0));  // no such rank
}

TEST(PeerHealth, StartWaitsForEveryPeerUpOrRefused) {
  peer_health h(three_nodes(), 1, 100ms, 1000ms);
  EXPECT_FALSE(h.settled());
  EXPECT_EQ(h.unconnected(), (std::vector<std::uint64_t>{0, 2}));
  EXPECT_EQ(h.unreached(), (std::vector<std::uint64_t>{0, 2}));
  h.connected(0);
  EXPECT_FALSE(h.settled());
  h.refused(2, "another dataset.seed (7 there, 5 here)");
  EXPECT_TRUE(h.settled());
  EXPECT_TRUE(h.unconnected().empty());
  h.lost(0, "exit_reason(remote_link_unreachable)");  // reached once: start does not wait
  EXPECT_TRUE(h.settled());
  EXPECT_EQ(h.unconnected(), std::vector<std::uint64_t>{0});  // but it is dialed again
  h.connected(2);                                             // a refused peer stays refused
  EXPECT_FALSE(h.usable(2, peer_health::clock::now()));
}

TEST(PeerHealth, TheReportNamesEachPeerThatFailedAndHow) {
  peer_health h(three_nodes(), 0, 100ms, 1000ms);
  h.unreachable(2, "Connection refused");
  EXPECT_EQ(h.failures(),
            (std::vector<std::string>{"127.0.0.1:7101 (rank 1): never reached",
                                      "node-c:7102 (rank 2): never reached (Connection refused)"}));
  h.connected(1);
  h.connected(2);
  EXPECT_TRUE(h.failures().empty());
  h.lost(1, "exit_reason(remote_link_unreachable)");
  h.unreachable(1, "Connection refused");  // trying again does not hide why it went down
  h.timed_out(2, peer_health::clock::now());
  EXPECT_EQ(h.failures(),
            (std::vector<std::string>{
                "127.0.0.1:7101 (rank 1): connection lost: exit_reason(remote_link_unreachable)",
                "node-c:7102 (rank 2): 1 fetch timed out"}));
  h.connected(1);
  EXPECT_EQ(h.failures()[0],
            "127.0.0.1:7101 (rank 1): connection lost 1 time, up again (last: "
            "exit_reason(remote_link_unreachable))");
  EXPECT_EQ(h.unconnected(), std::vector<std::uint64_t>{});
}

TEST(PeerHealth, APeerWhoseRunEndedIsNoFailure) {
  peer_health h(three_nodes(), 2, 100ms, 1000ms);
  h.connected(0);
  h.connected(1);
  h.left(0);
  EXPECT_FALSE(h.usable(0, peer_health::clock::now()));
  EXPECT_EQ(h.unconnected(), std::vector<std::uint64_t>{0});
  EXPECT_TRUE(h.failures().empty());
}

TEST(PeerPace, AnswersNearTheDeadlineRestThePeerLongerEachTimeInARow) {
  peer_pace pace(1000ms, 100ms);
  auto t = peer_pace::clock::time_point{} + 1h;
  EXPECT_TRUE(pace.ready(t));
  // Fast answers: never rests.
  for (int i = 0; i < 10; ++i) {
    pace.answered(50ms, t);
    EXPECT_TRUE(pace.ready(t));
  }
  // Answers just under the deadline: the third in a row takes the typical answer past half the
  // deadline, and the peer rests.
  pace.answered(950ms, t);
  pace.answered(950ms, t);
  EXPECT_TRUE(pace.ready(t));
  pace.answered(950ms, t);
  EXPECT_FALSE(pace.ready(t));
  EXPECT_FALSE(pace.ready(t + 99ms));
  EXPECT_TRUE(pace.ready(t + 100ms));
  EXPECT_EQ(pace.slow_rests(), 1u);
  // Answers to fetches asked before the rest began start no rest of their own.
  pace.answered(950ms, t + 50ms);
  EXPECT_TRUE(pace.ready(t + 100ms));
  // Still slow after each rest: 200 ms, then 400 ms.
  t += 100ms;
  pace.answered(950ms, t);
  EXPECT_FALSE(pace.ready(t + 199ms));
  EXPECT_TRUE(pace.ready(t + 200ms));
  t += 200ms;
  pace.answered(950ms, t);
  EXPECT_FALSE(pace.ready(t + 399ms));
  EXPECT_TRUE(pace.ready(t + 400ms));
  // The rests stop growing at 32 x the first.
  for (int i = 0; i < 10; ++i) {
    t += 1h;
    pace.answered(950ms, t);
  }
  EXPECT_FALSE(pace.ready(t + 3199ms));
  EXPECT_TRUE(pace.ready(t + 3200ms));
  // Fast answers bring the typical time back under half the deadline: the series ends, and
  // the next rest is the first again.
  t += 1h;
  while (pace.typical() * 2 > 1000ms) {
    pace.answered(10ms, t);
  }
  EXPECT_TRUE(pace.ready(t));
  pace.struck(t);
  EXPECT_FALSE(pace.ready(t + 99ms));
  EXPECT_TRUE(pace.ready(t + 100ms));
}

TEST(PeerPace, StrikesRestAtOnceAndDoubleInARow) {
  peer_pace pace(1000ms, 100ms);
  auto t = peer_pace::clock::time_point{} + 1h;
  pace.struck(t);
  EXPECT_FALSE(pace.ready(t + 99ms));
  pace.struck(t + 50ms);  // a second timeout of a fetch asked before the rest
  EXPECT_TRUE(pace.ready(t + 100ms));
  pace.struck(t + 100ms);
  EXPECT_FALSE(pace.ready(t + 299ms));
  EXPECT_TRUE(pace.ready(t + 300ms));
  EXPECT_EQ(pace.slow_rests(), 0u);  // strikes are counted by who strikes
}

TEST(PeerHealth, SlowAndWrongPeersRestAndAreNamed) {
  peer_health h(three_nodes(), 0, 100ms, 1000ms);
  auto t = peer_health::clock::time_point{} + 1h;
  h.connected(1);
  h.connected(2);
  for (int i = 0; i < 3; ++i) {
    h.answered(1, 950ms, t);
    h.answered(2, 20ms, t);
  }
  EXPECT_FALSE(h.usable(1, t));
  EXPECT_TRUE(h.usable(1, t + 100ms));
  EXPECT_TRUE(h.usable(2, t));
  h.gave_wrong_record(2, t);
  EXPECT_FALSE(h.usable(2, t));
  EXPECT_TRUE(h.usable(2, t + 100ms));
  EXPECT_EQ(h.failures(),
            (std::vector<std::string>{
                "127.0.0.1:7101 (rank 1): not asked 1 time for a while: its answers came near "
                "cluster.peer_timeout_ms (typical 549 ms)",
                "node-c:7102 (rank 2): 1 record did not match this node's dataset"}));
}

TEST(PeerAddress, LoopbackIsLocalhostAnd127And6Colon1) {
  for (const char* local :
       {"localhost", "LocalHost", "127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE((peer_address{local, 7100}.loopback())) << local;
  }
  for (const char* beyond :
       {"10.0.0.1", "0.0.0.0", "::", "fe80::1", "node-a", "128.0.0.1", "localhost.example.com"}) {
    EXPECT_FALSE((peer_address{beyond, 7100}.loopback())) << beyond;
  }
}

TEST(PeerAddress, ParsesHostAndPortAndSaysWhatIsWrong) {
  auto v4 = parse_peer_address("10.0.0.7:7100");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "10.0.0.7");
  EXPECT_EQ(v4->port, 7100);
  auto v6 = parse_peer_address("[::1]:80");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->text(), "[::1]:80");
  for (const char* bad : {"node", "node:", ":7100", "node:0", "node:65536", "node:7x", "::1:80"}) {
    auto parsed = parse_peer_address(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message().find(bad), std::string::npos) << parsed.error().what();
  }
}

TEST(TcpProbe, AnswersWhetherAnythingListens) {
  auto [listener, port] = testing::tcp_listen();
  ASSERT_NE(port, 0);
  auto open = tcp_probe({"127.0.0.1", port}, 1000ms);
  ASSERT_TRUE(open) << open.error().what();
  // The probe's connection stays open while the caller holds it (so that the real one made
  // next gets another socket number on the peer), and closes when it is dropped.
  unique_fd accepted(accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(accepted);
  char byte = 0;
  EXPECT_EQ(recv(accepted.get(), &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  *open = unique_fd{};
  EXPECT_EQ(recv(accepted.get(), &byte, 1, 0), 0) << "closed once dropped";
  // A port nothing listens on: refused at once, naming the address.
  auto refused = tcp_probe({"127.0.0.1", 1}, 1000ms);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::disconnected);
  EXPECT_NE(refused.error().message().find("127.0.0.1:1"), std::string::npos);
  auto unknown = tcp_probe({"no-such-host.invalid", 7100}, 1000ms);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("no-such-host.invalid"), std::string::npos);
}

// A peer's probe is held until a later attempt's replaces it, or the holder goes (the run's
// end): only then does the peer see it close.
TEST(HeldProbes, HoldOneProbePerPeerUntilTheEnd) {
  auto [listener, port] = testing::tcp_listen();
  ASSERT_NE(port, 0);
  const peer_address to{"127.0.0.1", port};
  auto probes = std::make_unique<held_probes>();
  auto first = tcp_probe(to, 1000ms);
  ASSERT_TRUE(first);
  unique_fd first_end(accept(listener.get(), nullptr, nullptr));
  probes->keep(1, std::move(*first));
  auto second = tcp_probe(to, 1000ms);
  ASSERT_TRUE(second);
  unique_fd second_end(accept(listener.get(), nullptr, nullptr));
  char byte = 0;
  EXPECT_EQ(recv(first_end.get(), &byte, 1, MSG_DONTWAIT), -1) << "held";
  probes->keep(1, std::move(*second));
  EXPECT_EQ(probes->size(), 1u);
  EXPECT_EQ(recv(first_end.get(), &byte, 1, 0), 0) << "replaced by the later attempt's: closed";
  EXPECT_EQ(recv(second_end.get(), &byte, 1, MSG_DONTWAIT), -1) << "held";
  probes.reset();
  EXPECT_EQ(recv(second_end.get(), &byte, 1, 0), 0) << "closed with the holder";
}

}  // namespace
}  // namespace conveyor

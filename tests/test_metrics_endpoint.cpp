// The metrics endpoint (core/observe/metrics_endpoint.hpp) on real sockets: it serves its routes
// and nothing else, listens only on the address given, says which address it could not take,
// and a client that connects and sends nothing neither stops others being served nor holds
// the endpoint's shutdown beyond its time-out.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

#include "core/base/unique_fd.hpp"
#include "core/observe/metrics_endpoint.hpp"
#include "support/loopback_tcp.hpp"

namespace conveyor {
namespace {

metrics_endpoint::limits quick() {
  metrics_endpoint::limits l;
  l.workers = 1;
  l.queued = 2;
  l.timeout = std::chrono::seconds(1);
  return l;
}

std::unique_ptr<metrics_endpoint> start_at_any_port(std::atomic<int>& calls) {
  auto e = metrics_endpoint::start(
      peer_address{"127.0.0.1", 0},
      {{"/metrics", "text/plain; version=0.0.4; charset=utf-8",
        [&calls] { return "# calls " + std::to_string(++calls) + "\n"; }},
       {"/state.json", "application/json", [] { return std::string("{}"); }}},
      quick());
  EXPECT_TRUE(e) << e.error().message();
  return e ? std::move(*e) : nullptr;
}

TEST(MetricsEndpoint, ServesEachRoutesTextAndNothingElse) {
  std::atomic<int> calls{0};
  auto e = start_at_any_port(calls);
  ASSERT_TRUE(e);
  httplib::Client client("127.0.0.1", e->port());
  auto first = client.Get("/metrics");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "# calls 1\n");
  EXPECT_EQ(first->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  auto second = client.Get("/metrics");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body, "# calls 2\n");  // rendered at each request
  auto state = client.Get("/state.json");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->body, "{}");
  EXPECT_EQ(state->get_header_value("Content-Type"), "application/json");
  for (const char* path : {"/etc/passwd", "/", "/stateXjson", "/metrics/"}) {
    auto other = client.Get(path);  // the paths are exact: "." is no pattern
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 404) << path;
  }
  auto huge = client.Get("/metrics?" + std::string(20000, 'a'));  // a head past 8 KiB
  ASSERT_TRUE(huge);
  EXPECT_NE(huge->status, 200);
  EXPECT_EQ(calls.load(), 2);
}

TEST(MetricsEndpoint, ListensOnlyOnTheAddressGiven) {
  std::atomic<int> calls{0};
  auto e = start_at_any_port(calls);
  ASSERT_TRUE(e);
  EXPECT_TRUE(testing::tcp_connect(e->port()));
  EXPECT_FALSE(testing::tcp_connect(e->port(), "127.0.0.2"));  // loopback, but not the address
}

TEST(MetricsEndpoint, AnAddressInUseIsAnErrorNamingIt) {
  std::atomic<int> calls{0};
  auto first = start_at_any_port(calls);
  ASSERT_TRUE(first);
  auto second = metrics_endpoint::start(peer_address{"127.0.0.1", first->port()}, {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), errc::invalid_config);
  EXPECT_NE(second.error().message().find("monitor.metrics"), std::string::npos);
  EXPECT_NE(second.error().message().find("127.0.0.1:" + std::to_string(first->port())),
            std::string::npos)
      << second.error().message();
}

TEST(MetricsEndpoint, ASilentClientHoldsNeitherOthersNorTheShutdown) {
  std::atomic<int> calls{0};
  auto e = start_at_any_port(calls);
  ASSERT_TRUE(e);
  // Connected, never a byte: the one worker reads it until its time-out.
  auto silent = testing::tcp_connect(e->port());
  ASSERT_TRUE(silent);
  httplib::Client client("127.0.0.1", e->port());
  client.set_read_timeout(std::chrono::seconds(30));
  auto r = client.Get("/metrics");  // served once the silent one is given up (or before)
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto again = testing::tcp_connect(e->port());  // silent again, while shutting down
  ASSERT_TRUE(again);
  e.reset();  // returns: the silent connection is let go after the time-out
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace conveyor

// A session's outbox (core/serving/session_outbox.hpp): messages go out at once while the
// client reads, wait in order while it does not, and overflow past the limit instead of
// blocking the node; the client then reads everything that waited, in order.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>

#include "core/serving/serve_socket.hpp"
#include "core/serving/session_outbox.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

struct pair_of_sockets {
  unique_fd node;
  unique_fd client;
};

pair_of_sockets seqpacket_pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

TEST(SessionOutbox, AReadingClientGetsEachMessageAtOnce) {
  auto [node, client] = seqpacket_pair();
  std::atomic<int> wakes{0};
  session_outbox box(node.get(), 4, [&] { ++wakes; });
  ASSERT_TRUE(box.push(serve::batch_ready{1, 0, 0, 4, false}));
  EXPECT_FALSE(box.pending());
  auto got = receive_serve(client.get(), 1s);
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_EQ(std::get<serve::batch_ready>(got->message).slot, 1u);
  EXPECT_EQ(wakes, 0);
}

TEST(SessionOutbox, AClientThatDoesNotReadOverflowsItNeverBlocksIt) {
  auto [node, client] = seqpacket_pair();
  std::atomic<int> wakes{0};
  const std::size_t limit = 4;
  session_outbox box(node.get(), limit, [&] { ++wakes; });
  std::uint32_t pushed = 0;
  while (box.push(serve::batch_ready{pushed, 0, pushed, 4, false})) {
    ++pushed;
    ASSERT_LT(pushed, 1000000u) << "a socket that never fills";
  }
  EXPECT_TRUE(box.overflowed());
  EXPECT_TRUE(box.pending());
  EXPECT_GE(wakes, 2) << "when messages began to wait, and when it overflowed";
  EXPECT_FALSE(box.push(serve::end{})) << "nothing more once overflowed";
  // The client reads late: what went out and what waited arrive in order.
  for (std::uint32_t i = 0; i < pushed; ++i) {
    auto got = receive_serve(client.get(), 1s);
    if (!got) {
      box.flush();  // the socket has room again
      got = receive_serve(client.get(), 1s);
    }
    ASSERT_TRUE(got) << "message " << i << ": " << got.error().what();
    EXPECT_EQ(std::get<serve::batch_ready>(got->message).slot, i);
  }
}

TEST(SessionOutbox, AClosedOrBrokenOutboxSendsNothing) {
  auto [node, client] = seqpacket_pair();
  session_outbox box(node.get(), 4, [] {});
  client.reset();
  EXPECT_FALSE(box.push(serve::end{}));
  EXPECT_TRUE(box.broken());
  auto [node2, client2] = seqpacket_pair();
  session_outbox closed(node2.get(), 4, [] {});
  closed.close();
  EXPECT_FALSE(closed.push(serve::end{}));
  EXPECT_FALSE(receive_serve(client2.get(), 0ms));
}

}  // namespace
}  // namespace conveyor

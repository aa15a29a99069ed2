// Shared memory between real processes (core/serving): a memfd region passed over a Unix
// SOCK_SEQPACKET socket to a forked child, which maps it and reads it in place.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "core/serving/fd_passing.hpp"
#include "core/serving/shared_region.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

// A connected SOCK_SEQPACKET pair: {node's end, client's end}.
std::pair<unique_fd, unique_fd> socket_pair() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

// Forks a child that runs `body` and exits with what it returns.
template <class Body>
pid_t spawn(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::_exit(body());
  }
  return pid;
}

// Waits for `pid`: its exit code, or 128 + the signal that killed it.
int exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::uint64_t sum_of(const std::uint8_t* p, std::size_t n) {
  return std::accumulate(p, p + n, std::uint64_t{0});
}

// The client side: receives the region, checks its sum, reports it, then waits for the node to
// write byte 0 and checks that the write shows through its own mapping.
int client_reads_in_place(int socket, std::size_t bytes, std::uint64_t want) {
  auto m = receive_message(socket, 64, 10s);
  if (!m || m->fds.size() != 1) {
    return 10;
  }
  auto mapped = shared_region::attach(std::move(m->fds.front()), false);
  if (!mapped || mapped->size() != bytes || mapped->writable()) {
    return 11;
  }
  std::uint64_t sum = sum_of(mapped->data(), bytes);
  if (sum != want || !send_message(socket, &sum, sizeof(sum))) {
    return 12;
  }
  auto go = receive_message(socket, 64, 10s);
  return go && mapped->data()[0] == 0xAB ? 0 : 13;
}

TEST(SharedRegion, AChildProcessReadsTheRegionInPlaceAndSeesLaterWrites) {
  constexpr std::size_t bytes = 8 << 20;  // every page touched: no /dev/shm cap applies
  auto region = shared_region::create("test-batches", bytes);
  ASSERT_TRUE(region) << region.error().what();
  for (std::size_t i = 0; i < bytes; ++i) {
    region->data()[i] = static_cast<std::uint8_t>(i * 7);
  }
  auto want = sum_of(region->data(), bytes);
  auto [node, client] = socket_pair();
  pid_t child = spawn([&, c = client.get()] { return client_reads_in_place(c, bytes, want); });
  const char hello[] = "region";
  ASSERT_TRUE(send_message(node.get(), hello, sizeof(hello), region->fd()));
  auto reported = receive_message(node.get(), 64, 10s);
  ASSERT_TRUE(reported) << reported.error().what();
  ASSERT_EQ(reported->bytes.size(), sizeof(std::uint64_t));
  region->data()[0] = 0xAB;  // after the client mapped it: the same pages, no copy
  ASSERT_TRUE(send_message(node.get(), hello, 1));
  EXPECT_EQ(exit_code(child), 0);
}

TEST(SharedRegion, ItsSizeIsSealedAndACreatorOnlyRegionCannotBeWrittenByReaders) {
  auto region = shared_region::create("sealed", 4096, shared_region::writers::creator_only);
  ASSERT_TRUE(region) << region.error().what();
  EXPECT_NE(::ftruncate(region->fd(), 1024), 0) << "a shrink would SIGBUS the readers";
  region->data()[1] = 5;  // the creator's own mapping stays writable
  auto again = [&](bool writable) {
    return shared_region::attach(unique_fd(::fcntl(region->fd(), F_DUPFD_CLOEXEC, 0)), writable);
  };
  auto refused = again(true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), errc::invalid_argument);
  auto reader = again(false);
  ASSERT_TRUE(reader) << reader.error().what();
  EXPECT_EQ(reader->data()[1], 5);
  EXPECT_NE(::mprotect(reader->data(), 4096, PROT_READ | PROT_WRITE), 0)
      << "read-only must not be undone by the reader";
}

TEST(SharedRegion, AnythingButASealedMemfdIsRefused) {
  auto [a, b] = socket_pair();
  auto bad = shared_region::attach(std::move(a), false);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
  EXPECT_FALSE(shared_region::create("empty", 0));
}

TEST(FdPassing, APeerThatDiesIsAnErrorNotAHang) {
  auto [node, client] = socket_pair();
  pid_t child = spawn([c = client.get()] {
    const char partial[] = "half";
    (void)send_message(c, partial, sizeof(partial));  // unread when the child is killed
    ::raise(SIGKILL);
    return 0;
  });
  client.reset();  // only the child holds the client's end now
  EXPECT_EQ(exit_code(child), 128 + SIGKILL);
  auto first = receive_message(node.get(), 64, 10s);
  ASSERT_TRUE(first) << "what the peer sent before it died still arrives";
  auto gone = receive_message(node.get(), 64, 10s);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), errc::disconnected) << gone.error().what();
  const char late[] = "late";
  auto sent = send_message(node.get(), late, sizeof(late));
  ASSERT_FALSE(sent) << "no SIGPIPE, an error";
  EXPECT_EQ(sent.error().code(), errc::disconnected);
}

// A peer that closes its end with a message of ours unread (a client killed with a batch
// announced) makes Linux report a reset on our end once, before the messages the peer had
// sent (its releases): the reset is an error of its own, and each message still arrives, whole.
TEST(FdPassing, APeerClosedWithOurMessageUnreadLosesNoneOfItsOwn) {
  auto [node, client] = socket_pair();
  const char announced[] = "announced";
  ASSERT_TRUE(send_message(node.get(), announced, sizeof(announced)));  // never read
  const char released[] = "released";
  ASSERT_TRUE(send_message(client.get(), released, sizeof(released)));
  client.reset();
  std::vector<std::string> arrived;
  for (int i = 0; i < 4; ++i) {
    auto got = receive_message(node.get(), 64, 1s);
    if (got) {
      arrived.emplace_back(got->bytes.begin(), got->bytes.end());
    } else {
      EXPECT_EQ(got.error().code(), errc::disconnected) << got.error().what();
    }
  }
  EXPECT_EQ(arrived, std::vector<std::string>{std::string(released, sizeof(released))});
}

// Sends "x" with `count` descriptors of /dev/null on `socket`.
void send_with_descriptors(int socket, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  char byte = 'x';
  iovec io{&byte, 1};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  ASSERT_NE(c, nullptr);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  ASSERT_GE(::sendmsg(socket, &m, 0), 0);
  for (int fd : fds) {
    ::close(fd);
  }
}

int descriptors_open() {
  return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                        std::filesystem::directory_iterator{}));
}

TEST(FdPassing, EveryDescriptorThatArrivesIsOwnedAndClosedWithTheMessage) {
  auto [node, client] = socket_pair();
  const int before = descriptors_open();
  for (int count : {1, 2, 3, 16, 40}) {
    send_with_descriptors(client.get(), count);
    auto got = receive_message(node.get(), 64, 1s);
    if (count <= static_cast<int>(max_received_descriptors)) {
      ASSERT_TRUE(got) << got.error().what();
      EXPECT_EQ(got->fds.size(), static_cast<std::size_t>(count));
    } else {
      ASSERT_FALSE(got) << count << " descriptors";
      EXPECT_NE(got.error().message().find("more than 16 descriptors"), std::string::npos);
    }
  }
  EXPECT_EQ(descriptors_open(), before) << "a descriptor leaked";
}

TEST(FdPassing, ATooLongMessageAndAQuietSocketAreErrors) {
  auto [node, client] = socket_pair();
  auto quiet = receive_message(client.get(), 64, 0ms);
  ASSERT_FALSE(quiet);
  EXPECT_EQ(quiet.error().code(), errc::timed_out);
  std::vector<std::uint8_t> big(100, 1);
  ASSERT_TRUE(send_message(node.get(), big.data(), big.size()));
  auto cut = receive_message(client.get(), 10, 1s);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().code(), errc::invalid_argument);
  EXPECT_NE(cut.error().message().find("longer than 10 bytes"), std::string::npos);
}

}  // namespace
}  // namespace conveyor

// libFuzzer target: arbitrary bytes as a serving control message (what a client or a node
// receives from its peer), decoded directly and received over a real SOCK_SEQPACKET socket with
// 0 to 23 descriptors attached (the first byte says how many). Decoding must return an error or
// a message that encodes back to the same bytes; receiving must close every descriptor that
// came with the message unless the message takes one (and then hand over exactly one); never
// crash, read out of bounds or leak a descriptor.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/serving/serve_protocol.hpp"
#include "core/serving/serve_socket.hpp"

namespace {

struct transport {
  int sender = -1;
  int receiver = -1;

  transport() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
      std::abort();
    }
    sender = fds[0];
    receiver = fds[1];
  }
};

// The descriptor number the next open() gets: the lowest free one, so a leak moves it.
int lowest_free_descriptor() {
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ::close(probe);
  return probe;
}

void send_with_descriptors(int socket, const std::uint8_t* data, std::size_t size, int count) {
  std::vector<int> fds(static_cast<std::size_t>(count), -1);
  for (auto& fd : fds) {
    fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  iovec io{const_cast<std::uint8_t*>(data), size};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  (void)::sendmsg(socket, &m, MSG_NOSIGNAL);
  for (int fd : fds) {
    ::close(fd);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = conveyor::serve::decode(data, size);
  if (m && conveyor::serve::encode(*m) != std::vector<std::uint8_t>(data, data + size)) {
    std::abort();  // a message that decodes must re-encode to itself
  }
  if (size < 2) {
    return 0;
  }
  static transport t;
  const int lowest_free = lowest_free_descriptor();
  send_with_descriptors(t.sender, data + 1, size - 1, data[0] % 24);
  {
    auto got = conveyor::receive_serve(t.receiver, std::chrono::milliseconds(0));
    if (got && got->fd && !conveyor::serve::takes_descriptor(got->message)) {
      std::abort();  // a descriptor handed over with a message that takes none
    }
  }
  if (lowest_free_descriptor() != lowest_free) {
    std::abort();  // a descriptor that came with the message was not closed
  }
  return 0;
}

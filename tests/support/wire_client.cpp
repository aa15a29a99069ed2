#include "support/wire_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "core/serving/blob_fd.hpp"
#include "core/serving/unix_socket.hpp"

namespace conveyor::testing {

wire_client::wire_client(const std::string& socket) {
  auto c = connect_unix(socket, std::chrono::seconds(60));
  if (c) {
    fd_ = std::move(*c);
  }
}

bool wire_client::send_bytes(const std::vector<std::uint8_t>& bytes, int descriptors) {
  std::vector<unique_fd> nulls;
  std::vector<int> raw;
  for (int i = 0; i < descriptors; ++i) {
    nulls.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw.push_back(nulls.back().get());
  }
  iovec io{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * raw.size()) + sizeof(cmsghdr));
  if (!raw.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = CMSG_SPACE(sizeof(int) * raw.size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    if (c == nullptr) {
      return false;
    }
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * raw.size());
    std::memcpy(CMSG_DATA(c), raw.data(), sizeof(int) * raw.size());
  }
  return ::sendmsg(fd_.get(), &m, MSG_NOSIGNAL) >= 0;
}

bool wire_client::send(const serve::message& m, int descriptor) {
  auto bytes = serve::encode(m);
  iovec io{bytes.data(), bytes.size()};
  msghdr h{};
  h.msg_iov = &io;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (descriptor >= 0) {
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    if (c == nullptr) {
      return false;
    }
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &descriptor, sizeof(int));
  }
  return ::sendmsg(fd_.get(), &h, MSG_NOSIGNAL) >= 0;
}

std::optional<serve::message> wire_client::receive(std::chrono::milliseconds wait) {
  pollfd p{fd_.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) != 1) {
    return std::nullopt;
  }
  std::vector<std::uint8_t> buf(serve::max_message_size);
  auto got = ::recv(fd_.get(), buf.data(), buf.size(), 0);  // descriptors: closed by the kernel
  if (got <= 0) {
    return std::nullopt;
  }
  auto m = serve::decode(buf.data(), static_cast<std::size_t>(got));
  return m ? std::optional<serve::message>(std::move(*m)) : std::nullopt;
}

std::string wire_client::failure_text(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto m = receive(left);
    if (!m) {
      return "";
    }
    if (const auto* f = std::get_if<serve::failure>(&*m)) {
      return f->text;
    }
  }
  return "";
}

bool wire_client::closed_by_node(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::vector<std::uint8_t> buf(serve::max_message_size);
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) != 1) {
      return false;
    }
    if (::recv(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT) <= 0) {
      return true;  // end of stream, or reset
    }
  }
  return false;
}

unique_fd sealed_memfd(const std::vector<std::uint8_t>& bytes) {
  auto fd = blob_fd(bytes, "test-state");
  return fd ? std::move(*fd) : unique_fd{};
}

}  // namespace conveyor::testing

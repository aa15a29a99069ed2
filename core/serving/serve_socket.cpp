#include "core/serving/serve_socket.hpp"

#include <string>

#include "core/serving/fd_passing.hpp"

namespace conveyor {

expected<void> send_serve(int socket, const serve::message& m, int fd, bool wait) {
  auto bytes = serve::encode(m);
  return send_message(socket, bytes.data(), bytes.size(), fd, wait);
}

expected<serve_received> receive_serve(int socket, std::chrono::milliseconds timeout) {
  auto got = receive_message(socket, serve::max_message_size, timeout);
  if (!got) {
    return std::move(got).error();
  }
  auto m = serve::decode(got->bytes.data(), got->bytes.size());
  if (!m) {
    return std::move(m).error();  // the descriptors close with `got`
  }
  const auto allowed = serve::takes_descriptor(*m) ? 1U : 0U;
  if (got->fds.size() > allowed) {
    return error{errc::invalid_argument, "serving message: type " + std::to_string(m->index() + 1) +
                                             " came with " + std::to_string(got->fds.size()) +
                                             " descriptors (it takes " + std::to_string(allowed) +
                                             "): all closed"};
  }
  // Built in place and returned as it is: moving a message variant into the result makes g++
  // 12 at -O3 warn of members "maybe uninitialized" that are not (-Wmaybe-uninitialized).
  expected<serve_received> out{serve_received{}};
  out->message = std::move(*m);
  if (!got->fds.empty()) {
    out->fd = std::move(got->fds.front());
  }
  return out;
}

}  // namespace conveyor

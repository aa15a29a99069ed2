#include "core/serving/serve_socket.hpp"

#include "core/serving/fd_passing.hpp"

namespace conveyor {

expected<void> send_serve(int socket, const serve::message& m, int fd) {
  auto bytes = serve::encode(m);
  return send_message(socket, bytes.data(), bytes.size(), fd);
}

expected<serve_received> receive_serve(int socket, std::chrono::milliseconds timeout) {
  auto got = receive_message(socket, serve::max_message_size, timeout);
  if (!got) {
    return std::move(got).error();
  }
  auto m = serve::decode(got->bytes.data(), got->bytes.size());
  if (!m) {
    return std::move(m).error();
  }
  serve_received out;
  out.message = std::move(*m);
  out.fd = std::move(got->fd);
  return out;
}

}  // namespace conveyor

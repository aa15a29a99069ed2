#include "api/client_connection.hpp"

namespace conveyor {
namespace {

error about_node(const std::string& socket_path, const error& e) {
  if (e.code() == errc::disconnected) {
    return {errc::disconnected, "the Conveyor node at " + socket_path +
                                    " has gone (its connection closed): " + e.message()};
  }
  return {e.code(), "the Conveyor node at " + socket_path + ": " + e.message()};
}

}  // namespace

expected<void> send_to_node(int socket, const std::string& socket_path, const serve::message& m) {
  auto bytes = serve::encode(m);
  if (auto ok = send_message(socket, bytes.data(), bytes.size()); !ok) {
    return about_node(socket_path, ok.error());
  }
  return {};
}

expected<client_message> receive_from_node(int socket, const std::string& socket_path,
                                           std::chrono::milliseconds timeout) {
  auto got = receive_message(socket, serve::max_message_size, timeout);
  if (!got) {
    return about_node(socket_path, got.error());
  }
  auto m = serve::decode(got->bytes.data(), got->bytes.size());
  if (!m) {
    return about_node(socket_path, m.error());
  }
  if (const auto* f = std::get_if<serve::failure>(&*m)) {
    return error{f->code, "the Conveyor node at " + socket_path + ": " + f->text};
  }
  return client_message{std::move(*m), std::move(got->fd)};
}

}  // namespace conveyor

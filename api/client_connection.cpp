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

expected<void> send_to_node(int socket, const std::string& socket_path, const serve::message& m,
                            int fd) {
  if (auto ok = send_serve(socket, m, fd); !ok) {
    return about_node(socket_path, ok.error());
  }
  return {};
}

expected<serve_received> receive_from_node(int socket, const std::string& socket_path,
                                           std::chrono::milliseconds timeout) {
  auto got = receive_serve(socket, timeout);
  if (!got) {
    return about_node(socket_path, got.error());
  }
  if (const auto* f = std::get_if<serve::failure>(&got->message)) {
    return error{f->code, "the Conveyor node at " + socket_path + ": " + f->text};
  }
  return got;
}

}  // namespace conveyor

#pragma once
/// A hand-written client of the serving protocol, as a hostile local process would write one:
/// raw SOCK_SEQPACKET messages (any bytes, any number of descriptors) to a node's socket, and
/// what the node answers. Every wait is bounded.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/unique_fd.hpp"
#include "core/serving/serve_protocol.hpp"

namespace conveyor::testing {

class wire_client {
 public:
  /// Connects to `socket`, waiting up to 60 s for a node to listen; an unconnected client
  /// (connected() false) when none does.
  explicit wire_client(const std::string& socket);

  bool connected() const noexcept { return static_cast<bool>(fd_); }
  int fd() const noexcept { return fd_.get(); }

  /// Sends `bytes` with a descriptor of /dev/null for each of `descriptors`; false when the
  /// socket refused it (the node closed the connection).
  bool send_bytes(const std::vector<std::uint8_t>& bytes, int descriptors = 0);
  /// Sends `m` with `descriptor` attached when it is >= 0.
  bool send(const serve::message& m, int descriptor = -1);
  /// The node's next message, if one comes within `wait`.
  std::optional<serve::message> receive(std::chrono::milliseconds wait = std::chrono::seconds(30));
  /// The text of the failure the node answers with, reading past anything else; "" when the
  /// connection ends or `wait` passes first.
  std::string failure_text(std::chrono::milliseconds wait = std::chrono::seconds(30));
  /// Whether the node closes the connection within `wait` (reading what it still sends).
  bool closed_by_node(std::chrono::milliseconds wait = std::chrono::seconds(30));

 private:
  unique_fd fd_;
};

/// A sealed memfd holding `bytes` (as a client sends a resume state).
unique_fd sealed_memfd(const std::vector<std::uint8_t>& bytes);

}  // namespace conveyor::testing

#pragma once
/// One connection of a serving node (feed_server.hpp): the client's socket, who it is, what it
/// attached as, and its outbox. Owned by the server's poll loop; only its outbox is shared (the
/// feed hub sends through it from the pullers).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/base/unique_fd.hpp"
#include "core/batching/resume_state.hpp"
#include "core/serving/serve_protocol.hpp"
#include "core/serving/session_outbox.hpp"
#include "core/serving/unix_socket.hpp"

namespace conveyor {

struct client_session {
  unique_fd fd;  ///< reset once the session is dropped (the poll loop then forgets it)
  peer_identity peer;
  std::shared_ptr<session_outbox> outbox;
  std::chrono::steady_clock::time_point since;     ///< when it connected
  int job = -1;                                    ///< once attached
  int rank = -1;                                   ///< once attached
  std::chrono::steady_clock::time_point welcomed;  ///< when it attached
  std::uint64_t waited_ns = 0;                     ///< its trainer's wait, as its last release said
  /// serve.resume, before the pipeline starts: the attach waiting for it, and its state.
  std::optional<serve::attach> waiting;
  std::optional<resume_state> resume;

  bool attached() const noexcept { return job >= 0; }
  /// Connected, but neither attached nor waiting to: what serve.attach_timeout_s bounds.
  bool pending() const noexcept { return !attached() && !waiting; }
};

}  // namespace conveyor

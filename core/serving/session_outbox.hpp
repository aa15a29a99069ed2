#pragma once
/// The messages a node has for one client, sent without ever blocking the node. A message goes
/// out at once when nothing waits before it and the client's socket takes it; otherwise it
/// waits here, in order, until the socket can take more (the node's poll loop calls flush()
/// when the socket is writable). A client that does not read lets at most `limit` messages
/// wait: one more overflows the outbox, which takes nothing from then on, and the node drops
/// that client (its unreleased batches go to the next client of its rank and job).
///
/// Thread-safe: any thread pushes (the pullers publish batches under the feed hub's lock), the
/// poll loop's thread flushes; no call blocks.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "conveyor/error.hpp"
#include "core/serving/serve_protocol.hpp"

namespace conveyor {

class session_outbox {
 public:
  /// `socket`: the client's (non-blocking, owned by the caller, open while this outbox is
  /// used); `wake`: called, without this outbox's lock, when a message starts to wait (the
  /// poll loop then watches the socket for room) or the outbox overflows.
  session_outbox(int socket, std::size_t limit, std::function<void()> wake);

  /// Sends `m` (with a duplicate of `fd` when >= 0, which must stay open until sent) or
  /// queues it; false when the outbox has overflowed or the socket has failed (the client is
  /// to be dropped).
  bool push(const serve::message& m, int fd = -1);
  /// Sends what waits, as far as the socket takes it; false when the socket has failed.
  bool flush();
  /// Messages wait for room in the socket.
  bool pending() const;
  /// The client did not read: more than `limit` messages would have waited.
  bool overflowed() const;
  /// The socket failed (the client has gone).
  bool broken() const;
  /// The node is done with the client (its socket is about to close): nothing is sent any more,
  /// and what waits is dropped.
  void close();

 private:
  struct queued {
    std::vector<std::uint8_t> bytes;
    int fd = -1;
  };
  /// Sends queued messages from the front until the socket is full; under mutex_.
  void drain_locked();

  const int socket_;
  const std::size_t limit_;
  const std::function<void()> wake_;
  mutable std::mutex mutex_;
  std::deque<queued> waiting_;
  bool overflowed_ = false;
  bool broken_ = false;
};

}  // namespace conveyor

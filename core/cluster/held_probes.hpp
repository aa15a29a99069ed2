#pragma once
/// The probe connections (core/cluster/tcp_probe.hpp) of the peers this node reached, held
/// open until the node stops. CAF 0.17 names a connection by its socket's number and cleans up
/// after a closed one later, through its queue: a connection closed on a peer frees a number
/// that the next connection accepted there may get, and the late clean-up then removes that
/// connection's route (its node answers nothing more over it). A probe closed while another
/// node dials the same peer would do that to the other node's link; held, it closes only when
/// the run is over. One per peer: a probe of a later attempt at the same peer replaces it.

#include <cstdint>
#include <map>
#include <mutex>

#include "core/base/unique_fd.hpp"

namespace conveyor {

/// Thread-safe: every dialer keeps its probe here.
class held_probes {
 public:
  /// Holds `probe`, the connection of an attempt at peer `rank` that reached it.
  void keep(std::uint64_t rank, unique_fd probe) {
    std::lock_guard<std::mutex> lock(mutex_);
    probes_[rank] = std::move(probe);
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return probes_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, unique_fd> probes_;
};

}  // namespace conveyor

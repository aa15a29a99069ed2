#include "actors/peer_directory.hpp"

#include <caf/actor_cast.hpp>

#include <algorithm>
#include <mutex>

namespace conveyor {

peer_directory::peer_directory(std::vector<peer_address> nodes, std::uint64_t self,
                               std::chrono::milliseconds backoff,
                               std::chrono::milliseconds deadline)
    : health_(std::move(nodes), self, backoff, deadline), handles_(health_.world()) {}

peer_cache_actor peer_directory::usable(std::uint64_t rank,
                                        peer_health::clock::time_point now) const {
  if (!health_.usable(rank, now)) {
    return {};
  }
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return handles_[rank];
}

void peer_directory::connected(std::uint64_t rank, peer_cache_actor handle) {
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    handles_[rank] = std::move(handle);
  }
  health_.connected(rank);
}

bool peer_directory::up(std::uint64_t rank) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return rank < handles_.size() && handles_[rank];
}

bool peer_directory::speaks_for(std::uint64_t rank, const caf::strong_actor_ptr& sender) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return sender && rank < handles_.size() && handles_[rank] &&
         sender->node() == handles_[rank].node();
}

bool peer_directory::from_a_peer(const caf::strong_actor_ptr& sender) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return sender && std::any_of(handles_.begin(), handles_.end(), [&](const peer_cache_actor& h) {
           return h && h.node() == sender->node();
         });
}

std::optional<std::uint64_t> peer_directory::forget(const caf::actor_addr& address) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (std::uint64_t r = 0; r < handles_.size(); ++r) {
    if (handles_[r] && handles_[r].address() == address) {
      handles_[r] = nullptr;
      return r;
    }
  }
  return std::nullopt;
}

bool peer_directory::left(std::uint64_t rank) {
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    if (rank >= handles_.size() || !handles_[rank]) {
      return false;
    }
    handles_[rank] = nullptr;
  }
  health_.left(rank);
  return true;
}

std::vector<peer_cache_actor> peer_directory::connected_peers() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  std::vector<peer_cache_actor> out;
  for (const auto& h : handles_) {
    if (h) {
      out.push_back(h);
    }
  }
  return out;
}

void peer_directory::clear() {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (auto& h : handles_) {
    h = nullptr;
  }
}

}  // namespace conveyor

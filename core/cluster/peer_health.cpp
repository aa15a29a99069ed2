#include "core/cluster/peer_health.hpp"

namespace conveyor {

peer_health::peer_health(std::vector<peer_address> nodes, std::uint64_t self,
                         std::chrono::milliseconds backoff)
    : self_(self), backoff_(backoff) {
  for (auto& a : nodes) {
    peer p;
    p.address = std::move(a);
    peers_.push_back(std::move(p));
  }
}

std::string peer_health::name(std::uint64_t rank) const {
  return peers_[rank].address.text() + " (rank " + std::to_string(rank) + ")";
}

bool peer_health::usable(std::uint64_t rank, clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer_rank(rank) && peers_[rank].now == state::up && now >= peers_[rank].skip_until;
}

void peer_health::connected(std::uint64_t rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank) && peers_[rank].now != state::refused) {
    peers_[rank].now = state::up;
  }
}

void peer_health::unreachable(std::uint64_t rank, std::string reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank) && peers_[rank].now == state::connecting) {
    peers_[rank].reason = std::move(reason);  // a peer down keeps why it went down
  }
}

void peer_health::lost(std::uint64_t rank, std::string reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank) && peers_[rank].now == state::up) {
    peers_[rank].now = state::down;
    peers_[rank].reason = std::move(reason);
    peers_[rank].losses += 1;
  }
}

void peer_health::left(std::uint64_t rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank) && peers_[rank].now == state::up) {
    peers_[rank].now = state::left;
  }
}

void peer_health::refused(std::uint64_t rank, std::string reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank)) {
    peers_[rank].now = state::refused;
    peers_[rank].reason = std::move(reason);
  }
}

void peer_health::timed_out(std::uint64_t rank, clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank)) {
    peers_[rank].timeouts += 1;
    peers_[rank].skip_until = now + backoff_;
  }
}

bool peer_health::settled() const {
  return unreached().empty();
}

std::vector<std::uint64_t> peer_health::unreached() const {
  return ranks_where([](const peer& p) { return p.now == state::connecting; });
}

std::vector<std::uint64_t> peer_health::unconnected() const {
  return ranks_where([](const peer& p) { return p.now != state::up && p.now != state::refused; });
}

template <class Predicate>
std::vector<std::uint64_t> peer_health::ranks_where(Predicate holds) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::uint64_t> out;
  for (std::uint64_t r = 0; r < peers_.size(); ++r) {
    if (peer_rank(r) && holds(peers_[r])) {
      out.push_back(r);
    }
  }
  return out;
}

std::string peer_health::failure(const peer& p) const {
  std::string what;
  switch (p.now) {
    case state::connecting:
      what = "never reached" + (p.reason.empty() ? "" : " (" + p.reason + ")");
      break;
    case state::down:
      what = "connection lost: " + p.reason;
      break;
    case state::refused:
      what = "refused: " + p.reason;
      break;
    case state::up:
    case state::left:
      if (p.losses > 0) {
        what = "connection lost " + std::to_string(p.losses) + " time" +
               (p.losses == 1 ? "" : "s") + ", up again (last: " + p.reason + ")";
      }
      break;
  }
  if (p.timeouts > 0) {
    what += (what.empty() ? "" : "; ") + std::to_string(p.timeouts) + " fetch" +
            (p.timeouts == 1 ? "" : "es") + " timed out";
  }
  return what;
}

std::vector<std::string> peer_health::failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (std::uint64_t r = 0; r < peers_.size(); ++r) {
    if (!peer_rank(r)) {
      continue;
    }
    if (auto what = failure(peers_[r]); !what.empty()) {
      out.push_back(name(r) + ": " + what);
    }
  }
  return out;
}

}  // namespace conveyor

#include "core/cluster/peer_health.hpp"

namespace conveyor {
namespace {

// "1 fetch", "3 fetches".
std::string counted(std::uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

peer_health::peer_health(std::vector<peer_address> nodes, std::uint64_t self,
                         std::chrono::milliseconds backoff, std::chrono::milliseconds deadline)
    : self_(self) {
  for (auto& a : nodes) {
    peers_.emplace_back(std::move(a), peer_pace(deadline, backoff));
  }
}

std::string peer_health::name(std::uint64_t rank) const {
  return peers_[rank].address.text() + " (rank " + std::to_string(rank) + ")";
}

template <class Change>
void peer_health::update(std::uint64_t rank, Change change) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer_rank(rank)) {
    change(peers_[rank]);
  }
}

bool peer_health::usable(std::uint64_t rank, clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer_rank(rank) && peers_[rank].now == state::up && peers_[rank].pace.ready(now);
}

void peer_health::connected(std::uint64_t rank) {
  update(rank, [](peer& p) {
    if (p.now != state::refused) {
      p.now = state::up;
    }
  });
}

void peer_health::unreachable(std::uint64_t rank, std::string reason) {
  update(rank, [&](peer& p) {
    if (p.now == state::connecting) {
      p.reason = std::move(reason);  // a peer down keeps why it went down
    }
  });
}

void peer_health::lost(std::uint64_t rank, std::string reason) {
  update(rank, [&](peer& p) {
    if (p.now == state::up) {
      p.now = state::down;
      p.reason = std::move(reason);
      p.losses += 1;
    }
  });
}

void peer_health::left(std::uint64_t rank) {
  update(rank, [](peer& p) {
    if (p.now == state::up) {
      p.now = state::left;
    }
  });
}

void peer_health::refused(std::uint64_t rank, std::string reason) {
  update(rank, [&](peer& p) {
    p.now = state::refused;
    p.reason = std::move(reason);
  });
}

void peer_health::timed_out(std::uint64_t rank, clock::time_point now) {
  update(rank, [now](peer& p) {
    p.timeouts += 1;
    p.pace.struck(now);
  });
}

void peer_health::answered(std::uint64_t rank, clock::duration took, clock::time_point now) {
  update(rank, [took, now](peer& p) { p.pace.answered(took, now); });
}

void peer_health::gave_wrong_record(std::uint64_t rank, clock::time_point now) {
  update(rank, [now](peer& p) {
    p.wrong_records += 1;
    p.pace.struck(now);
  });
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
        what = "connection lost " + counted(p.losses, "time", "times") +
               ", up again (last: " + p.reason + ")";
      }
      break;
  }
  auto add = [&what](const std::string& more) { what += (what.empty() ? "" : "; ") + more; };
  if (p.timeouts > 0) {
    add(counted(p.timeouts, "fetch", "fetches") + " timed out");
  }
  if (p.wrong_records > 0) {
    add(counted(p.wrong_records, "record", "records") + " did not match this node's dataset");
  }
  if (p.pace.slow_rests() > 0) {
    add("not asked " + counted(p.pace.slow_rests(), "time", "times") + " for a while" +
        ": its answers came near cluster.peer_timeout_ms (typical " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(p.pace.typical()).count()) +
        " ms)");
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

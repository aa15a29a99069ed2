#include "actors/peer_links.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "actors/peer_dialer.hpp"
#include "core/base/log.hpp"

namespace conveyor {
namespace {

using clock = std::chrono::steady_clock;

// The first retry comes soon (the nodes of one job start within moments of each other), later
// ones ever later, up to the configured retry.
constexpr std::chrono::milliseconds first_retry{50};

struct links_state {
  static inline const char* name = "peer_links";
  peer_links_options opts;
  peer_cache_actor server;  ///< this node's, introduced to the peers it dials
  std::set<std::uint64_t> attempting;
  std::vector<std::string> told;  ///< per rank: the last reason logged for not reaching it
  std::vector<std::chrono::milliseconds> backoff;  ///< per rank: until the next attempt
  std::vector<clock::time_point> next_attempt;     ///< per rank
  std::shared_ptr<held_probes> probes = std::make_shared<held_probes>();
  bool wait_over = false;
  bool ready = false;

  peer_health& health() { return opts.peers->health(); }
  bool dials(std::uint64_t rank) const { return rank > opts.identity.rank; }
};

using links_pointer = peer_links_actor::stateful_pointer<links_state>;

std::string with_key(std::string what, std::uint64_t there, std::uint64_t here) {
  return what + " (" + std::to_string(there) + " there, " + std::to_string(here) + " here)";
}

proof_subject subject_of(const peer_identity& id, std::uint64_t receiver) {
  return {id.protocol, id.rank, receiver, id.dataset_size, id.seed, id.world, id.plan_digest};
}

// This node's identity as said to `rank`: with its proof for that rank.
peer_identity identity_for(const links_state& s, std::uint64_t rank) {
  auto out = s.opts.identity;
  out.proof = s.opts.secret.prove(subject_of(out, rank));
  return out;
}

// `theirs` proves to this node the rank it claims (always true without a secret).
bool proven(const links_state& s, const peer_identity& theirs) {
  return s.opts.secret.verify(subject_of(theirs, s.opts.identity.rank), theirs.proof);
}

// The answer to a hello or leave this node refuses; `why` reaches the sender.
caf::error refusal(std::string why) {
  return caf::make_error(caf::sec::invalid_argument, std::move(why));
}

// Start-up goes on once every peer is up or refused, or the wait is over.
void check_ready(links_pointer self) {
  auto& s = self->state;
  if (s.ready || !(s.wait_over || s.health().settled())) {
    return;
  }
  s.ready = true;
  auto missing = s.health().unreached();
  if (missing.empty()) {
    log("cluster")->info("cluster: every peer answered; reading starts");
  }
  for (auto rank : missing) {
    log("cluster")->warn(
        "cluster: {} not connected within cluster.peer_wait_s: reading starts without it (its "
        "samples come from storage until it is up)",
        s.health().name(rank));
  }
  if (s.opts.on_ready) {
    s.opts.on_ready();
    s.opts.on_ready = nullptr;  // drops the handles it held
  }
}

// An attempt at `rank` failed: tried again after a backoff; logged when the reason is new.
void not_reached(links_pointer self, std::uint64_t rank, const std::string& why) {
  auto& s = self->state;
  s.attempting.erase(rank);
  s.next_attempt[rank] = clock::now() + s.backoff[rank];
  s.backoff[rank] = std::min(s.backoff[rank] * 2, s.opts.retry);
  s.health().unreachable(rank, why);
  if (s.told[rank] != why) {
    s.told[rank] = why;
    log("cluster")->info("cluster: {} not reached ({}); trying again", s.health().name(rank), why);
  }
  check_ready(self);
}

// `rank` said `theirs` (in a hello, or in answer to ours): used from now on, or refused.
void admit(links_pointer self, std::uint64_t rank, const peer_cache_actor& handle,
           const peer_identity& theirs) {
  auto& s = self->state;
  s.attempting.erase(rank);
  auto name = s.health().name(rank);
  if (auto why = identity_mismatch(s.opts.identity, theirs, rank)) {
    s.health().refused(rank, *why);
    log("cluster")->error("cluster: {} is not used: {}; its samples are read from storage", name,
                          *why);
  } else {
    self->monitor(handle);
    s.opts.peers->connected(rank, handle);
    s.told[rank].clear();
    s.backoff[rank] = first_retry;
    log("cluster")->info("cluster: {} is up", name);
  }
  check_ready(self);
}

// The peer this node dialed at `rank` answered its hello with `theirs`.
void greeted(links_pointer self, std::uint64_t rank, const peer_identity& theirs,
             const peer_cache_actor& handle) {
  auto& s = self->state;
  if (!proven(s, theirs)) {
    not_reached(self, rank,
                "its answer to hello does not prove its rank (is cluster.secret_file the same "
                "on every node?)");
    return;
  }
  admit(self, rank, handle, theirs);
}

// An attempt at `rank`: greeting it (a peer this node dials), or only connecting to it.
dial_order order_for(links_pointer self, std::uint64_t rank, bool greet) {
  auto& s = self->state;
  return {rank,
          s.health().address(rank),
          s.opts.connector,
          identity_for(s, rank),
          s.server,
          self,
          s.opts.attempt_timeout,
          s.probes,
          greet};
}

void dial(links_pointer self, std::uint64_t rank) {
  self->state.attempting.insert(rank);
  spawn_peer_dialer(self->system(), order_for(self, rank, true));
}

// A node dialed this node and introduced itself with `theirs` and its server: admitted when it
// is of lower rank (only they dial), proves that rank, and the rank is not up already; the
// answer is this node's identity, or why the hello is refused.
caf::result<peer_identity> introduced(links_pointer self, const peer_identity& theirs,
                                      caf::strong_actor_ptr server) {
  auto& s = self->state;
  const auto rank = theirs.rank;
  if (rank >= s.opts.identity.rank || !server) {
    log("cluster")->error(
        "cluster: a node that says it is rank {} dialed this node (rank {} of {}): only nodes "
        "of lower rank do; do all nodes list cluster.peers in the same order?",
        rank, s.opts.identity.rank, s.health().world());
    return refusal("rank " + std::to_string(s.opts.identity.rank) +
                   " is dialed only by nodes of lower rank");
  }
  const auto name = s.health().name(rank);
  if (!proven(s, theirs)) {
    log("cluster")->warn(
        "cluster: a hello as {} was refused: it does not prove that rank (another "
        "cluster.secret_file, or not a node of this run); the rank may still say hello",
        name);
    return refusal("hello refused: no proof of rank " + std::to_string(rank));
  }
  if (s.opts.peers->up(rank)) {
    if (s.opts.peers->speaks_for(rank, self->current_sender())) {
      // The same node again: its dialer did not hear the answer (CAF 0.17 can drop a route
      // while the connection stays up, core/cluster/held_probes.hpp). Answered again.
      log("cluster")->info("cluster: {} said hello again (it did not hear the answer)", name);
      return identity_for(s, rank);
    }
    log("cluster")->warn(
        "cluster: a second hello as {} was refused: that rank is up, and its connection is kept",
        name);
    return refusal("hello refused: rank " + std::to_string(rank) + " is up already");
  }
  admit(self, rank, caf::actor_cast<peer_cache_actor>(std::move(server)), theirs);
  return identity_for(s, rank);
}

// Peer `rank` says its run is over: believed only from that peer's own node.
caf::result<std::uint64_t> leave(links_pointer self, std::uint64_t rank) {
  auto& s = self->state;
  const auto& sender = self->current_sender();
  if (!s.opts.peers->speaks_for(rank, sender)) {
    log("cluster")->warn(
        "cluster: a leave for rank {} from {} was ignored: it is not that peer's node", rank,
        sender ? caf::to_string(sender->node()) : std::string("an anonymous sender"));
    return refusal("leave refused: the sender is not rank " + std::to_string(rank));
  }
  if (s.opts.peers->left(rank)) {
    log("cluster")->info("cluster: {} ended its run: its samples are read from storage from now on",
                         s.health().name(rank));
  }
  return s.opts.identity.rank;
}

// The peer at `down.source` went down: its connection lost, or its run over.
void peer_down(links_pointer self, const caf::down_msg& down) {
  auto& s = self->state;
  // A peer whose pipeline stopped (its run ended, or Ctrl-C) says so; a lost connection (a
  // killed node) does not.
  const bool ended = !down.reason || down.reason == caf::exit_reason::user_shutdown;
  auto rank = s.opts.peers->forget(down.source);
  if (rank && ended) {
    s.health().left(*rank);
    log("cluster")->info("cluster: {} stopped: its samples are read from storage from now on",
                         s.health().name(*rank));
  } else if (rank) {
    const auto reason = self->system().render(down.reason);
    s.health().lost(*rank, reason);
    log("cluster")->warn("cluster: {} went down ({}): its samples are read from storage{}",
                         s.health().name(*rank), reason,
                         s.dials(*rank) ? "; dialing it again" : " until it dials again");
    if (!s.dials(*rank)) {
      spawn_peer_dialer(self->system(), order_for(self, *rank, false));  // see dial_order::greet
    }
  }
  check_ready(self);  // it was reached: start need not wait for it
}

peer_links_actor::behavior_type links(links_pointer self, peer_links_options opts) {
  auto& s = self->state;
  s.opts = std::move(opts);
  const auto world = s.health().world();
  s.told.assign(world, std::string());
  s.backoff.assign(world, std::min(first_retry, s.opts.retry));
  s.next_attempt.assign(world, clock::now());
  for (std::uint64_t rank = 0; rank < s.opts.identity.rank; ++rank) {
    s.health().unreachable(rank, "it has not dialed this node (nodes dial those of higher rank)");
  }
  if (!s.opts.secret.enabled() && world > 1) {
    log("cluster")->info(
        "cluster: no cluster.secret_file: peers' ranks are taken on their word (a process that "
        "reaches this node's port may say hello as a rank that is not up)");
  }
  self->set_down_handler([self](const caf::down_msg& down) { peer_down(self, down); });
  self->delayed_send(self, s.opts.wait, atoms::peers_up::value);
  check_ready(self);  // a node alone has nobody to wait for
  return {
      [self](atoms::connect, const peer_cache_actor& server) {
        self->state.server = server;
        self->send(self, atoms::tick::value);
      },
      [self](atoms::hello, const peer_identity& theirs, caf::strong_actor_ptr& server) {
        return introduced(self, theirs, std::move(server));
      },
      [self](atoms::greeted, std::uint64_t rank, const peer_identity& theirs,
             const peer_cache_actor& server) { greeted(self, rank, theirs, server); },
      [self](atoms::failed, std::uint64_t rank, const std::string& why) {
        not_reached(self, rank, why);
      },
      [self](atoms::leave, std::uint64_t rank) { return leave(self, rank); },
      [self](atoms::tick) {
        auto& st = self->state;
        for (auto rank : st.health().unconnected()) {
          if (st.dials(rank) && st.attempting.count(rank) == 0 &&
              clock::now() >= st.next_attempt[rank]) {
            dial(self, rank);
          }
        }
        self->delayed_send(self, std::min(first_retry, st.opts.retry), atoms::tick::value);
      },
      [self](atoms::peers_up) {
        self->state.wait_over = true;
        check_ready(self);
      },
  };
}

}  // namespace

std::optional<std::string> identity_mismatch(const peer_identity& mine, const peer_identity& theirs,
                                             std::uint64_t rank) {
  if (theirs.protocol != mine.protocol) {
    return with_key("another peer protocol version", theirs.protocol, mine.protocol);
  }
  if (theirs.rank != rank) {
    return "it is rank " + std::to_string(theirs.rank) + ", but cluster.peers lists it as rank " +
           std::to_string(rank);
  }
  if (theirs.world != mine.world) {
    return with_key("another cluster.world", theirs.world, mine.world);
  }
  if (theirs.dataset_size != mine.dataset_size) {
    return with_key("another dataset (dataset.path: samples", theirs.dataset_size,
                    mine.dataset_size) +
           ")";
  }
  if (theirs.seed != mine.seed) {
    return with_key("another dataset.seed", theirs.seed, mine.seed);
  }
  if (theirs.plan_digest != mine.plan_digest) {
    return std::string(
        "another cache plan (cache.memory, cache.disk_size, cluster.shard_by or the dataset's "
        "files differ)");
  }
  return std::nullopt;
}

peer_links_actor spawn_peer_links(caf::actor_system& sys, peer_links_options options) {
  return sys.spawn(links, std::move(options));
}

}  // namespace conveyor

#include "actors/peer_links.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <set>
#include <vector>

#include "core/base/log.hpp"
#include "core/cluster/tcp_probe.hpp"

namespace conveyor {
namespace {

struct links_state {
  static inline const char* name = "peer_links";
  std::set<std::uint64_t> attempting;
  std::vector<std::string> told;  ///< per rank: the last reason logged for not reaching it
  bool wait_over = false;
  bool ready = false;
};

using links_pointer = peer_links_actor::stateful_pointer<links_state>;

std::string with_key(std::string what, std::uint64_t there, std::uint64_t here) {
  return what + " (" + std::to_string(there) + " there, " + std::to_string(here) + " here)";
}

// Start-up goes on once every peer is up or refused, or the wait is over.
void check_ready(links_pointer self, peer_links_options& opts) {
  auto& s = self->state;
  auto& health = opts.peers->health();
  if (s.ready || !(s.wait_over || health.settled())) {
    return;
  }
  s.ready = true;
  auto missing = health.unconnected();
  if (missing.empty()) {
    log("cluster")->info("cluster: every peer answered; reading starts");
  }
  for (auto rank : missing) {
    log("cluster")->warn(
        "cluster: {} not reached within cluster.peer_wait_s: reading starts without it (its "
        "samples come from storage until it is up)",
        health.name(rank));
  }
  if (opts.on_ready) {
    opts.on_ready();
    opts.on_ready = nullptr;  // drops the handles it held
  }
}

// An attempt at `rank` failed: logged when the reason is new.
void not_reached(links_pointer self, peer_links_options& opts, std::uint64_t rank,
                 const std::string& why) {
  auto& s = self->state;
  s.attempting.erase(rank);
  opts.peers->health().unreachable(rank, why);
  if (s.told[rank] != why) {
    s.told[rank] = why;
    log("cluster")->info("cluster: {} not reached ({}); trying again", opts.peers->health().name(rank),
                         why);
  }
  check_ready(self, opts);
}

// The peer answered hello with `theirs`: connected, or refused for good.
void greeted(links_pointer self, peer_links_options& opts, std::uint64_t rank,
             const peer_cache_actor& handle, const peer_identity& theirs) {
  auto& s = self->state;
  s.attempting.erase(rank);
  auto name = opts.peers->health().name(rank);
  if (auto why = identity_mismatch(opts.identity, theirs, rank)) {
    opts.peers->health().refused(rank, *why);
    log("cluster")->error("cluster: {} is not used: {}; its samples are read from storage", name,
                          *why);
  } else {
    self->monitor(handle);
    opts.peers->connected(rank, handle);
    s.told[rank].clear();
    log("cluster")->info("cluster: {} is up", name);
  }
  check_ready(self, opts);
}

void say_hello(links_pointer self, peer_links_options& opts, std::uint64_t rank,
               peer_cache_actor handle) {
  self->request(handle, opts.attempt_timeout, atoms::hello::value, opts.identity)
      .then([self, &opts, rank, handle](
                const peer_identity& theirs) { greeted(self, opts, rank, handle, theirs); },
            [self, &opts, rank](const caf::error& e) {
              not_reached(self, opts, rank, "no answer to hello: " + self->system().render(e));
            });
}

void attempt(links_pointer self, peer_links_options& opts, std::uint64_t rank) {
  const auto& address = opts.peers->health().address(rank);
  if (auto probe = tcp_probe(address, opts.attempt_timeout); !probe) {
    not_reached(self, opts, rank, probe.error().message());
    return;
  }
  self->state.attempting.insert(rank);
  self->request(opts.connector, opts.attempt_timeout, caf::connect_atom::value, address.host,
                address.port)
      .then(
          [self, &opts, rank](const caf::node_id&, caf::strong_actor_ptr& ptr,
                              const std::set<std::string>&) {
            if (!ptr) {
              not_reached(self, opts, rank, "nothing is published there");
              return;
            }
            say_hello(self, opts, rank, caf::actor_cast<peer_cache_actor>(std::move(ptr)));
          },
          [self, &opts, rank](const caf::error& e) {
            not_reached(self, opts, rank, self->system().render(e));
          });
}

peer_links_actor::behavior_type links(links_pointer self, peer_links_options opts) {
  // The options live in the actor's state: handlers and callbacks refer to them there.
  auto shared = std::make_shared<peer_links_options>(std::move(opts));
  self->state.told.assign(shared->peers->health().world(), std::string());
  self->set_down_handler([self, shared](const caf::down_msg& down) {
    auto reason = self->system().render(down.reason);
    if (auto rank = shared->peers->lost(down.source, reason)) {
      log("cluster")->warn(
          "cluster: {} went down ({}): its samples are read from storage; trying again every "
          "{} ms",
          shared->peers->health().name(*rank), reason, shared->retry.count());
    }
  });
  self->send(self, atoms::tick::value);
  self->delayed_send(self, shared->wait, atoms::peers_up::value);
  return {
      [self, shared](atoms::tick) {
        for (auto rank : shared->peers->health().unconnected()) {
          if (self->state.attempting.count(rank) == 0) {
            attempt(self, *shared, rank);
          }
        }
        self->delayed_send(self, shared->retry, atoms::tick::value);
      },
      [self, shared](atoms::peers_up) {
        self->state.wait_over = true;
        check_ready(self, *shared);
      },
  };
}

}  // namespace

std::optional<std::string> identity_mismatch(const peer_identity& mine,
                                             const peer_identity& theirs, std::uint64_t rank) {
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
  return sys.spawn<caf::detached>(links, std::move(options));
}

}  // namespace conveyor

#include "actors/peer_server.hpp"

#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "core/base/log.hpp"

namespace conveyor {
namespace {

peer_record refusal(peer_status status, std::string why) {
  peer_record r;
  r.status = static_cast<std::uint8_t>(status);
  r.error = std::move(why);
  return r;
}

peer_record found(record r) {
  peer_record out;
  out.status = static_cast<std::uint8_t>(peer_status::found);
  out.key = std::move(r.key);
  out.label = r.label;
  out.payload = std::move(r.payload);
  out.multipart = r.multipart;
  return out;
}

/// A worker: serves fetches on its own thread (a miss reads storage).
using fetch_worker = caf::typed_actor<
    caf::replies_to<atoms::fetch, std::uint64_t, std::uint64_t>::with<peer_record>>;

fetch_worker::behavior_type worker(fetch_worker::pointer, peer_server_options opts) {
  return {
      [opts](atoms::fetch, std::uint64_t epoch, std::uint64_t id) {
        return serve_fetch(opts, epoch, id);
      },
  };
}

struct front_state {
  static inline const char* name = "peer_server";
  std::vector<fetch_worker> workers;
  std::size_t next = 0;
  bool told_stranger = false;  ///< a fetch from a node that is no peer was logged
};

using front_pointer = peer_cache_actor::stateful_pointer<front_state>;

// A fetch from the sender of the current message is served: it is on a peer's node. The first
// refusal is logged (a stranger may ask many times).
bool from_a_peer(front_pointer self, const peer_server_options& opts) {
  const auto& sender = self->current_sender();
  if (opts.peers->from_a_peer(sender)) {
    return true;
  }
  if (!std::exchange(self->state.told_stranger, true)) {
    log("cluster")->warn(
        "cluster: a fetch from {}, which is no peer of this node, was refused (further ones "
        "are refused without a word)",
        sender ? caf::to_string(sender->node()) : std::string("an anonymous sender"));
  }
  return false;
}

peer_cache_actor::behavior_type front(front_pointer self, peer_server_options opts) {
  for (int w = 0; w < opts.workers; ++w) {
    self->state.workers.push_back(self->spawn<caf::detached + caf::linked>(worker, opts));
  }
  return {
      // The links actor answers hellos and leaves (it knows who is up): delegated, so that
      // it sees the peer as the sender and its answer goes straight to the peer.
      [self, opts](atoms::hello, const peer_identity& theirs, const caf::strong_actor_ptr& server) {
        return self->delegate(opts.links, atoms::hello::value, theirs, server);
      },
      [self, opts](atoms::leave, std::uint64_t rank) {
        return self->delegate(opts.links, atoms::leave::value, rank);
      },
      [self, opts](atoms::fetch, std::uint64_t epoch, std::uint64_t id) {
        // The front answers itself (the workers never talk to another node): CAF 0.17 kept a
        // detached actor that had answered a remote request from being destroyed, now and
        // then, and the node's shutdown waited for it forever.
        const bool served = from_a_peer(self, opts);  // before the promise takes the sender
        auto answer = self->make_response_promise<peer_record>();
        if (opts.ended && opts.ended->load()) {
          answer.deliver(refusal(peer_status::ended, "this node's run is over"));
          return answer;
        }
        if (!served) {
          answer.deliver(refusal(peer_status::not_a_peer, "this node serves its peers only"));
          return answer;
        }
        auto& s = self->state;
        const auto& to = s.workers[s.next++ % s.workers.size()];
        self->request(to, opts.deadline / 2, atoms::fetch::value, epoch, id)
            .then([answer](peer_record& r) mutable { answer.deliver(std::move(r)); },
                  [answer, id](const caf::error&) mutable {
                    answer.deliver(refusal(peer_status::read_failed,
                                           "sample " + std::to_string(id) +
                                               ": no answer from this node's storage in time"));
                  });
        return answer;
      },
  };
}

}  // namespace

peer_record serve_fetch(const peer_server_options& opts, std::uint64_t epoch, std::uint64_t id) {
  if (id >= opts.source->size() || epoch >= opts.epochs) {
    return refusal(peer_status::bad_request,
                   "sample " + std::to_string(id) + " of epoch " + std::to_string(epoch) +
                       " is outside this run (" + std::to_string(opts.source->size()) +
                       " samples, " + std::to_string(opts.epochs) + " epochs)");
  }
  if (!opts.cache || !opts.cache->member(id)) {
    return refusal(peer_status::not_held,
                   "sample " + std::to_string(id) + " is not one this node caches");
  }
  auto read = opts.cache->read_through(
      id, [&] { return opts.source->read(id); }, opts.deadline / 4);
  if (!read.got) {
    return refusal(peer_status::read_failed, read.got.error().what());
  }
  if (read.from_storage) {
    opts.status->reads().stored(epoch, read.got->payload.size());
  }
  opts.status->reads().served(epoch);
  return found(std::move(*read.got));
}

peer_cache_actor spawn_peer_server(caf::actor_system& sys, peer_server_options options) {
  return sys.spawn(front, std::move(options));
}

}  // namespace conveyor

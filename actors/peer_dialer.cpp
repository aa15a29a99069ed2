#include "actors/peer_dialer.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <optional>
#include <set>
#include <string>

#include "core/cluster/tcp_probe.hpp"

namespace conveyor {
namespace {

// The peer's published server, through the connector; nullopt with `why` set otherwise.
std::optional<peer_cache_actor> connect(caf::blocking_actor* self, const dial_order& order,
                                        std::string& why) {
  std::optional<peer_cache_actor> out;
  self->request(order.connector, order.timeout, caf::connect_atom::value, order.address.host,
                order.address.port)
      .receive(
          [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
            if (ptr) {
              out = caf::actor_cast<peer_cache_actor>(std::move(ptr));
            } else {
              why = "nothing is published there";
            }
          },
          [&](const caf::error& e) { why = self->system().render(e); });
  return out;
}

void dial(caf::blocking_actor* self, dial_order order) {
  auto fail = [&](const std::string& why) {
    if (order.greet) {
      self->send(order.links, atoms::failed::value, order.rank, why);
    }
  };
  // Held open (core/cluster/held_probes.hpp says why).
  auto probe = tcp_probe(order.address, order.timeout);
  if (!probe) {
    fail(probe.error().message());
    return;
  }
  std::string why;
  auto peer = connect(self, order, why);
  if (!peer) {
    fail(why);
    return;
  }
  if (!order.greet) {
    order.probes->keep(order.rank, std::move(*probe));
    return;
  }
  self->request(*peer, order.timeout, atoms::hello::value, order.identity,
                caf::actor_cast<caf::strong_actor_ptr>(order.server))
      .receive(
          [&](const peer_identity& theirs) {
            order.probes->keep(order.rank, std::move(*probe));
            self->send(order.links, atoms::greeted::value, order.rank, theirs, *peer);
          },
          [&](const caf::error& e) {
            fail("hello refused or not answered: " + self->system().render(e));
          });
}

}  // namespace

void spawn_peer_dialer(caf::actor_system& sys, dial_order order) {
  sys.spawn(dial, std::move(order));
}

}  // namespace conveyor

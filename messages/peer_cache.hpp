#pragma once
/// The contract between the nodes of a cluster whose caches serve each other's misses (the
/// partitioned cache, core/storage/cache_plan.hpp): the only messages that cross the network.
/// Bytes and integers only: CAF 0.17 corrupts floats on the wire (notes/caf-0.17.md). Every
/// type here is announced under the same name on every node (peer_message_types).
///
///   node A --hello(A's identity and proof, A's peer_cache_actor)--> node B's peer_cache_actor
///          <-- B's identity and proof (or an error: A's hello is refused)
///   node A --fetch(epoch, id)--> node B's peer_cache_actor --> peer_record (a refusal too)
///   node B --fetch(epoch, id)--> node A's peer_cache_actor --> peer_record
///   node A --leave(A's rank)--> node B's peer_cache_actor --> B's rank   (A's run is over)
///
/// One connection per pair of nodes: the node of lower rank dials, and introduces its own
/// server in its hello, so the other side fetches over the same connection. (Two connections
/// between the same pair of nodes, one dialed from each side, broke down at once under CAF
/// 0.17's TLS manager.)
///
/// What a node takes from a peer is checked: with cluster.secret_file, a hello and its answer
/// each carry a proof of the sender's rank (core/cluster/run_secret.hpp); a second hello for a
/// rank that is up is refused; `leave(rank)` counts only from that rank's own node; a fetched
/// record must match the node's own dataset (sample_source::check).
///
/// CAF 0.17 itself puts no bound on what a connection announces: its BASP broker reads a
/// message of whatever payload length the 32-bit header gives, allocating it first
/// (libcaf_io/src/io/basp_broker.cpp:145-147 and libcaf_io/src/io/network/stream.cpp:118-133
/// in the 0.17.6 tag; there is no middleman.max-payload or similar key), so anyone who can
/// open a connection to the port can make the node allocate up to 4 GiB per connection before
/// any message is read. TLS with certificates (cluster.tls_*) is the only protection: a
/// connection that does not complete the TLS handshake never reaches the broker.

#include <caf/actor_control_block.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "messages/atoms.hpp"

namespace conveyor {

/// What two nodes must agree on before one serves the other: the same protocol, dataset, seed
/// and cluster shape, and the same cache plan (its digest). `rank` is the sender's; `proof`
/// proves it to the receiver (HMAC-SHA256 under the run's secret, run_secret::prove over
/// these fields and the receiver's rank), empty without cluster.secret_file.
struct peer_identity {
  /// 3: peer_record carries `multipart`; 4: a fetch is a plain message answered by one, and a
  /// node whose run is over answers `ended`.
  std::uint32_t protocol = 4;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  std::uint64_t world = 0;
  std::uint64_t rank = 0;
  std::uint64_t plan_digest = 0;
  std::vector<std::uint8_t> proof;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_identity& x) {
  return f(caf::meta::type_name("conveyor::peer_identity"), x.protocol, x.dataset_size, x.seed,
           x.world, x.rank, x.plan_digest, x.proof);
}

/// How a node answered a fetch.
enum class peer_status : std::uint8_t {
  found = 0,        ///< `key`, `label`, `payload` and `multipart` are the sample
  not_held = 1,     ///< the sample is not one this node caches
  read_failed = 2,  ///< this node holds it but could not read it from storage (`error` says why)
  bad_request = 3,  ///< an id or epoch outside the run (`error` says which)
  not_a_peer = 4,   ///< the asker is on no node this node admitted as a peer (not yet, or not)
  ended = 5,        ///< this node's run is over: it serves no more (as if it had said leave)
};

/// A sample's record as one node sends it to another, or why it does not.
struct peer_record {
  std::uint8_t status = 0;  ///< a peer_status
  std::string key;
  std::int32_t label = 0;
  std::vector<std::uint8_t> payload;
  bool multipart = false;  ///< `payload` is a part container (core/storage/record.hpp)
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_record& x) {
  return f(caf::meta::type_name("conveyor::peer_record"), x.status, x.key, x.label, x.payload,
           x.multipart, x.error);
}

/// A node's cache as its peers see it, published on the node's address in cluster.peers.
/// `hello(identity, server)`: a node of lower rank introduces itself and its own cache server
/// (a peer_cache_actor); the answer is this node's identity, with its proof for that rank; an
/// error when the hello is refused (its proof does not hold, the rank is up already, or is
/// not below this node's). `fetch(epoch, id)` gives sample `id` from this node's cache, to a
/// node admitted as a peer (not_a_peer to any other). Every fetch is answered, within half the
/// fetch deadline (a refusal is an answer: read_failed when storage is slower), and from the
/// moment its run is over the node answers `ended`; the asker sends it as a plain message and
/// monitors the node's server meanwhile, so that a server or a connection that goes away ends
/// its wait at once. A
/// sample it holds but has not cached yet is read from its storage, cached and given (so the
/// cluster's storage is read once per sample); `epoch` is the asker's, for this node's
/// per-epoch counts. `leave(rank)`: that node's run is over (it stops serving): not a failure;
/// the answer confirms that this node knows; an error when the sender is not on that rank's
/// node.
using peer_cache_actor = caf::typed_actor<
    caf::replies_to<atoms::hello, peer_identity, caf::strong_actor_ptr>::with<peer_identity>,
    caf::replies_to<atoms::fetch, std::uint64_t, std::uint64_t>::with<peer_record>,
    caf::replies_to<atoms::leave, std::uint64_t>::with<std::uint64_t>>;

/// Announces the types above to an actor system's configuration (every node must).
inline void peer_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<peer_identity>("conveyor::peer_identity");
  cfg.add_message_type<peer_record>("conveyor::peer_record");
}

}  // namespace conveyor

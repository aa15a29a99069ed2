#include "actors/peer_fetcher.hpp"

#include <caf/all.hpp>

#include "core/base/log.hpp"

namespace conveyor {

peer_fetcher::peer_fetcher(caf::actor_system& system, std::shared_ptr<peer_directory> peers,
                           std::shared_ptr<const cache_plan> plan,
                           std::shared_ptr<const sample_source> source,
                           std::chrono::milliseconds deadline)
    : system_(&system),
      peers_(std::move(peers)),
      plan_(std::move(plan)),
      source_(std::move(source)),
      deadline_(deadline) {}

std::optional<record> peer_fetcher::fetch(std::uint64_t epoch, std::uint64_t id,
                                          read_counts& counts) const {
  auto rank = plan_->holder(id);
  if (!rank || *rank == plan_->rank()) {
    return std::nullopt;
  }
  auto holder = peers_->usable(*rank, peer_health::clock::now());
  auto got = holder ? ask(holder, *rank, epoch, id) : std::nullopt;
  if (got) {
    counts.fetched(epoch, got->payload.size());
  } else {
    counts.fell_back(epoch);
  }
  return got;
}

std::optional<record> peer_fetcher::ask(const peer_cache_actor& holder, std::uint64_t rank,
                                        std::uint64_t epoch, std::uint64_t id) const {
  std::optional<record> out;
  caf::scoped_actor self{*system_};
  // A plain message, its answer awaited beside the holder's down message: a holder whose run
  // ends, or whose connection is lost, ends the wait at once. (CAF 0.17's blocking receive of a
  // request's answer skips every other message, a down message too.)
  self->monitor(holder);
  const auto asked = peer_health::clock::now();
  self->send(holder, atoms::fetch::value, epoch, id);
  self->receive(
      [&](peer_record& r) {
        const auto now = peer_health::clock::now();
        peers_->health().answered(rank, now - asked, now);
        out = answered(r, rank, id);
      },
      [&](caf::down_msg& down) {
        log("cluster")->info("{} went away before it gave sample {} ({}): it is read from storage",
                             peers_->health().name(rank), id, system_->render(down.reason));
      },
      caf::after(deadline_) >>
          [&] {
            peers_->health().timed_out(rank, peer_health::clock::now());
            log("cluster")->warn(
                "{} did not give sample {} within cluster.peer_timeout_ms = {}: its samples are "
                "read from storage for a while",
                peers_->health().name(rank), id, deadline_.count());
          });
  self->demonitor(holder.address());
  return out;
}

std::optional<record> peer_fetcher::answered(peer_record& r, std::uint64_t rank,
                                             std::uint64_t id) const {
  switch (static_cast<peer_status>(r.status)) {
    case peer_status::found:
      return checked(r, rank, id);
    case peer_status::ended:
      if (peers_->left(rank)) {
        log("cluster")->info("{} ended its run: its samples are read from storage from now on",
                             peers_->health().name(rank));
      }
      return std::nullopt;
    default:
      log("cluster")->warn("{} did not give sample {}: {}", peers_->health().name(rank), id,
                           r.error);
      return std::nullopt;
  }
}

std::optional<record> peer_fetcher::checked(peer_record& r, std::uint64_t rank,
                                            std::uint64_t id) const {
  record got{std::move(r.key), r.label, std::move(r.payload), r.multipart};
  if (auto same = source_->check(id, got); !same) {
    peers_->health().gave_wrong_record(rank, peer_health::clock::now());
    log("cluster")->warn(
        "{} gave a record for sample {} that does not match this node's dataset ({}): it is "
        "read from storage, and that peer is not asked for a while",
        peers_->health().name(rank), id, same.error().what());
    return std::nullopt;
  }
  return got;
}

}  // namespace conveyor

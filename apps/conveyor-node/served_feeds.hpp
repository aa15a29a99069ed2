#pragma once
/// The shared memory of a serving node: one region (memfd) per rank, laid out as
/// core/serving/feed_layout.hpp says: a header that describes the fields, then `slots` batch
/// slots. The pipeline's feeders collate each batch's fields into a slot's buffer
/// (feed_memory()); the server writes the rest of the slot (its field table, ids, keys) when it
/// publishes the batch and passes the region's descriptor to the rank's clients.

#include <cstdint>
#include <vector>

#include "api/resolve_fields.hpp"
#include "config/topology.hpp"
#include "conveyor/batch.hpp"
#include "core/delivery/host_batch.hpp"
#include "core/serving/feed_layout.hpp"
#include "core/serving/shared_region.hpp"

namespace conveyor {

/// Created before the pipeline and destroyed after it. Thread-safe for distinct slots.
class served_feeds {
 public:
  /// `ranks` regions for `t`'s fields (`fields`, as resolve_fields gives them); with
  /// serve.jobs > 1 the regions are sealed read-only for clients.
  static expected<served_feeds> create(const topology& t, const resolved_fields& fields, int ranks);

  /// Per rank, where its feeder collates each slot's fields.
  std::vector<external_slots> feed_memory() const;
  /// The slot of rank `rank` that `b` (a batch of that rank's feeder) lies in, or -1.
  std::int64_t slot_of(int rank, const batch& b) const;
  /// Writes the field table, ids and keys of `b` (`fields`: where its fields lie) into its
  /// slot, stamped with now.
  void describe(int rank, std::uint32_t slot, const batch& b) const;

  const feed_layout& layout() const noexcept { return layout_; }
  std::uint32_t slots() const noexcept { return slots_; }
  const shared_region& region(int rank) const { return regions_[static_cast<std::size_t>(rank)]; }
  int ranks() const noexcept { return static_cast<int>(regions_.size()); }

 private:
  served_feeds(feed_layout layout, std::uint32_t slots, std::vector<shared_region> regions)
      : layout_(layout), slots_(slots), regions_(std::move(regions)) {}
  std::uint8_t* slot_at(int rank, std::uint32_t slot) const;

  feed_layout layout_;
  std::uint32_t slots_ = 0;
  std::vector<shared_region> regions_;
};

}  // namespace conveyor

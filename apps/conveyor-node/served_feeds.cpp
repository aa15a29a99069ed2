#include "apps/conveyor-node/served_feeds.hpp"

#include "api/batch_source.hpp"
#include "core/base/monotonic_clock.hpp"
#include "core/transforms/output_geometry.hpp"

namespace conveyor {

expected<served_feeds> served_feeds::create(const topology& t, int ranks) {
  auto geometry = output_geometry(t.transforms);
  if (!geometry) {
    return error{errc::invalid_config, t.source + ": serve.socket: " + geometry.error().message()};
  }
  auto batch_size = static_cast<std::uint64_t>(t.pipeline.batch_size);
  auto layout = slot_layout::make(batch_size, *geometry, default_key_bytes(batch_size));
  auto slots = static_cast<std::uint32_t>(t.pipeline.prefetch_batches + 1);
  auto who =
      t.serve.jobs > 1 ? shared_region::writers::creator_only : shared_region::writers::anyone;
  std::vector<shared_region> regions;
  for (int r = 0; r < ranks; ++r) {
    auto region =
        shared_region::create("conveyor-feed-" + std::to_string(r), slots * layout.slot_bytes, who);
    if (!region) {
      return std::move(region).error();
    }
    regions.push_back(std::move(*region));
  }
  return served_feeds(layout, slots, std::move(regions));
}

std::uint8_t* served_feeds::slot_at(int rank, std::uint32_t slot) const {
  return region(rank).data() + static_cast<std::size_t>(slot) * layout_.slot_bytes;
}

std::vector<external_slots> served_feeds::feed_memory() const {
  std::vector<external_slots> out;
  for (int r = 0; r < ranks(); ++r) {
    external_slots memory;
    memory.capacity = layout_.tensor_capacity;
    for (std::uint32_t s = 0; s < slots_; ++s) {
      memory.tensors.push_back(slot_at(r, s) + layout_.tensor_offset);
    }
    out.push_back(std::move(memory));
  }
  return out;
}

std::int64_t served_feeds::slot_of(int rank, const batch& b) const {
  if (b.size() == 0) {  // an end-of-epoch marker: its slot, but no data to locate it by
    auto slot = batch_access::slot(b);
    return slot >= 0 && static_cast<std::uint64_t>(slot) < slots_ ? slot : -1;
  }
  const auto* at = static_cast<const std::uint8_t*>(b.tensor().data);
  const auto* first = slot_at(rank, 0) + layout_.tensor_offset;
  if (at < first) {
    return -1;
  }
  auto offset = static_cast<std::size_t>(at - first);
  if (offset % layout_.slot_bytes != 0 || offset / layout_.slot_bytes >= slots_) {
    return -1;
  }
  return static_cast<std::int64_t>(offset / layout_.slot_bytes);
}

void served_feeds::describe(int rank, std::uint32_t slot, const batch& b) const {
  write_slot(layout_, slot_at(rank, slot), {b.labels(), b.sample_ids(), b.keys(), monotonic_ns()});
}

}  // namespace conveyor

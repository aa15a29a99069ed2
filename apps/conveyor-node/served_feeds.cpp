#include "apps/conveyor-node/served_feeds.hpp"

#include <cstring>

#include "api/batch_source.hpp"
#include "core/base/monotonic_clock.hpp"

namespace conveyor {

expected<served_feeds> served_feeds::create(const topology& t, const resolved_fields& fields,
                                            int ranks) {
  auto batch_size = static_cast<std::uint64_t>(t.pipeline.batch_size);
  auto layout =
      feed_layout::make(batch_size, static_cast<std::uint32_t>(fields.batch_schema->fields.size()),
                        fields.layout.bytes, default_key_bytes(batch_size));
  auto slots = static_cast<std::uint32_t>(t.pipeline.prefetch_batches + 1);
  auto header = encode_feed_header(layout, slots, *fields.batch_schema);
  if (!header) {
    return error{header.error().code(), t.source + ": serve.socket: " + header.error().message()};
  }
  auto who =
      t.serve.jobs > 1 ? shared_region::writers::creator_only : shared_region::writers::anyone;
  std::vector<shared_region> regions;
  for (int r = 0; r < ranks; ++r) {
    auto region = shared_region::create("conveyor-feed-" + std::to_string(r),
                                        layout.region_bytes(slots), who);
    if (!region) {
      return std::move(region).error();
    }
    std::memcpy(region->data(), header->data(), header->size());
    regions.push_back(std::move(*region));
  }
  return served_feeds(layout, slots, std::move(regions));
}

std::uint8_t* served_feeds::slot_at(int rank, std::uint32_t slot) const {
  return region(rank).data() + layout_.header_bytes +
         static_cast<std::size_t>(slot) * layout_.slot_bytes;
}

std::vector<external_slots> served_feeds::feed_memory() const {
  std::vector<external_slots> out;
  for (int r = 0; r < ranks(); ++r) {
    external_slots memory;
    memory.capacity = layout_.blob_bytes;
    for (std::uint32_t s = 0; s < slots_; ++s) {
      memory.buffers.push_back(slot_at(r, s) + layout_.blob_offset);
    }
    out.push_back(std::move(memory));
  }
  return out;
}

std::int64_t served_feeds::slot_of(int rank, const batch& b) const {
  auto slot = batch_access::slot(b);
  const auto* at = batch_access::host_buffer(b);
  if (slot < 0 || static_cast<std::uint64_t>(slot) >= slots_ ||
      (at != nullptr &&
       at != slot_at(rank, static_cast<std::uint32_t>(slot)) + layout_.blob_offset)) {
    return -1;  // not this rank's slot
  }
  return slot;
}

void served_feeds::describe(int rank, std::uint32_t slot, const batch& b) const {
  write_slot(layout_, slot_at(rank, slot),
             {batch_access::fields(b), b.sample_ids(), b.keys(), monotonic_ns()});
}

}  // namespace conveyor

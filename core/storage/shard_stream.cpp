#include "core/storage/shard_stream.hpp"

#include <algorithm>

namespace conveyor {

shard_stream::shard_stream(const shard_reader& reader, std::uint64_t chunk_bytes)
    : reader_(reader), chunk_bytes_(std::max<std::uint64_t>(chunk_bytes, 1)) {}

expected<void> shard_stream::fill_from(std::uint64_t first) {
  // Take whole records up to the chunk size (at least one, however large).
  auto begin = reader_.entry(first).offset;
  auto last = first + 1;
  while (last < reader_.size() &&
         reader_.entry(last).offset + reader_.entry(last).size - begin <= chunk_bytes_) {
    ++last;
  }
  const auto& end_entry = reader_.entry(last - 1);
  auto bytes = end_entry.offset + end_entry.size - begin;
  chunk_first_ = chunk_end_ = first;
  chunk_.resize(bytes);
  if (auto ok = reader_.source()->read_at(begin, chunk_.data(), chunk_.size()); !ok) {
    return error{ok.error().code(),
                 record_location(reader_.name(), first) + ": " + ok.error().message()};
  }
  chunk_end_ = last;
  // Ask the kernel for the next chunk now, so it is in the page cache when we get there.
  reader_.source()->will_need(begin + bytes, chunk_bytes_);
  return {};
}

expected<std::optional<record>> shard_stream::next() {
  if (next_ >= reader_.size()) {
    return std::optional<record>{};
  }
  auto i = next_++;
  if (i < chunk_first_ || i >= chunk_end_) {
    if (auto ok = fill_from(i); !ok) {
      return std::move(ok).error();
    }
  }
  auto at = reader_.entry(i).offset - reader_.entry(chunk_first_).offset;
  auto r = reader_.parse_record(i, chunk_.data() + at);
  if (!r) {
    return std::move(r).error();
  }
  return std::optional<record>(std::move(*r));
}

}  // namespace conveyor

#include "core/remote/read_ahead.hpp"

namespace conveyor {

read_ahead::read_ahead(std::shared_ptr<remote_store> store, const sample_source& dataset)
    : store_(std::move(store)), dataset_(dataset), fetched_in_(dataset.size(), 0) {}

void read_ahead::use_cache(std::shared_ptr<const minio_cache> cache) {
  cache_ = std::move(cache);
}

bool read_ahead::wanted_for_cache(std::uint64_t id) const {
  return cache_ && cache_->member(id) && !cache_->holds(id);
}

bool read_ahead::fetch_once(std::uint64_t id, std::uint64_t epoch) {
  if (!cache_ || !cache_->member(id)) {
    return true;  // read from the store every epoch
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& first = fetched_in_[id];
  if (first == 0) {
    first = epoch + 1;
  }
  return first == epoch + 1;  // within its first epoch, as often as asked (a fill, the window)
}

void read_ahead::want(std::uint64_t id, fetch_priority p, std::vector<range_want>& wants) const {
  for (const auto& e : dataset_.extents(id)) {
    wants.push_back({static_cast<std::size_t>(e.file), e.offset, e.size, p});
  }
}

void read_ahead::will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids) {
  std::vector<range_want> window;
  std::vector<range_want> fills;
  for (auto id : ids) {
    if (cache_ && cache_->holds(id)) {
      continue;  // a hit: no request
    }
    auto extents = dataset_.extents(id);
    if (extents.empty() || !fetch_once(id, epoch)) {
      continue;
    }
    want(id, fetch_priority::window, window);
    if (wanted_for_cache(id)) {
      fill_block(id, epoch, extents.front(), fills);
    }
  }
  window.insert(window.end(), fills.begin(), fills.end());
  if (!window.empty()) {
    store_->want(window, epoch);
  }
}

void read_ahead::fill_block(std::uint64_t id, std::uint64_t epoch, const storage_extent& at,
                            std::vector<range_want>& wants) {
  const auto block_bytes = store_->read_size();
  const auto block = at.offset / block_bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!blocks_.insert({at.file, block}).second) {
      return;
    }
  }
  // Samples of one shard are consecutive ids, stored in id order: walk out from `id` while the
  // neighbours lie in the same shard and block.
  auto in_block = [&](std::uint64_t other) {
    if (dataset_.shard_of(other) != std::optional<std::uint64_t>(at.file)) {
      return false;
    }
    auto e = dataset_.extents(other);
    return !e.empty() && e.front().offset / block_bytes == block;
  };
  for (auto other = id; other > 0 && in_block(other - 1); --other) {
    if (wanted_for_cache(other - 1) && fetch_once(other - 1, epoch)) {
      want(other - 1, fetch_priority::fill, wants);
    }
  }
  for (auto other = id + 1; other < dataset_.size() && in_block(other); ++other) {
    if (wanted_for_cache(other) && fetch_once(other, epoch)) {
      want(other, fetch_priority::fill, wants);
    }
  }
}

}  // namespace conveyor

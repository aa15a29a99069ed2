#include "core/remote/sequential_buffer.hpp"

#include <algorithm>
#include <cstring>

namespace conveyor {

sequential_buffer::sequential_buffer(std::shared_ptr<remote_store> store, std::size_t object,
                                     int ahead)
    : store_(std::move(store)),
      object_(object),
      ahead_(ahead),
      block_bytes_(store_->read_size()),
      inner_(store_->source(object)) {}

void sequential_buffer::stop() {
  buffering_ = false;
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ = {};
  holding_ = false;
  store_->forget(object_);
}

expected<void> sequential_buffer::load(std::uint64_t block) const {
  const auto size = inner_->size();
  auto span = [&](std::uint64_t b) {
    auto first = b * block_bytes_;
    return std::pair{first, std::min(block_bytes_, size - first)};
  };
  std::vector<range_want> ahead;
  for (int k = 1; k <= ahead_; ++k) {
    if ((block + k) * block_bytes_ < size) {
      auto [first, bytes] = span(block + k);
      ahead.push_back({object_, first, bytes, fetch_priority::window});
    }
  }
  store_->want(ahead, std::nullopt);
  auto [first, bytes] = span(block);
  bytes_.resize(bytes);
  holding_ = false;
  if (auto ok = store_->read(object_, first, bytes_.data(), bytes); !ok) {
    return ok;
  }
  held_ = block;
  holding_ = true;
  return {};
}

expected<void> sequential_buffer::read_at(std::uint64_t offset, std::uint8_t* dst,
                                          std::size_t n) const {
  if (!buffering_) {
    return inner_->read_at(offset, dst, n);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  while (n > 0) {
    if (offset >= size()) {
      return inner_->read_at(offset, dst, n);  // names the bad read
    }
    const auto block = offset / block_bytes_;
    if (!holding_ || held_ != block) {
      if (auto ok = load(block); !ok) {
        return ok;
      }
    }
    const auto within = offset - block * block_bytes_;
    const auto take = std::min<std::uint64_t>(n, bytes_.size() - within);
    std::memcpy(dst, bytes_.data() + within, take);
    dst += take;
    offset += take;
    n -= take;
  }
  return {};
}

}  // namespace conveyor

#include "core/batching/delivered_set.hpp"

#include <bitset>

namespace conveyor {
namespace {

constexpr std::uint64_t word_bits = 64;

std::uint64_t popcount(std::uint64_t w) {
  return static_cast<std::uint64_t>(std::bitset<64>(w).count());
}

}  // namespace

delivered_set::delivered_set(std::uint64_t size, std::uint64_t prefix,
                             std::vector<std::uint64_t> beyond)
    : size_(size), prefix_(prefix), count_(prefix), beyond_(std::move(beyond)) {
  for (auto w : beyond_) {
    count_ += popcount(w);
  }
  advance_prefix();
}

bool delivered_set::contains(std::uint64_t position) const noexcept {
  if (position < prefix_) {
    return true;
  }
  const auto offset = position - prefix_;
  const auto word = offset / word_bits;
  return word < beyond_.size() && ((beyond_[word] >> (offset % word_bits)) & 1U) != 0;
}

bool delivered_set::add(std::uint64_t position) {
  if (position >= size_ || contains(position)) {
    return false;
  }
  const auto offset = position - prefix_;
  const auto word = offset / word_bits;
  if (word >= beyond_.size()) {
    beyond_.resize(word + 1, 0);
  }
  beyond_[word] |= std::uint64_t{1} << (offset % word_bits);
  ++count_;
  advance_prefix();
  return true;
}

// Moves whole leading words of set bits into the prefix (the bitmap shifts by whole words, so
// the prefix advances 64 at a time; a partial first word stays a bitmap).
void delivered_set::advance_prefix() {
  std::size_t full = 0;
  while (full < beyond_.size() && beyond_[full] == ~std::uint64_t{0}) {
    ++full;
  }
  if (full > 0) {
    beyond_.erase(beyond_.begin(), beyond_.begin() + static_cast<std::ptrdiff_t>(full));
    prefix_ += full * word_bits;
  }
  if (prefix_ >= size_) {  // the last word may run past the end
    prefix_ = size_;
    beyond_.clear();
  }
  while (!beyond_.empty() && beyond_.back() == 0) {
    beyond_.pop_back();
  }
}

}  // namespace conveyor

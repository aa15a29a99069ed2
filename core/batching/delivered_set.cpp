#include "core/batching/delivered_set.hpp"

#include <algorithm>
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

std::uint64_t delivered_set::extent() const noexcept {
  return std::min(size_, prefix_ + beyond_.size() * word_bits);
}

std::uint64_t delivered_set::window(std::uint64_t from) const noexcept {
  std::uint64_t bits = 0;
  for (std::uint64_t i = 0; i < word_bits;) {
    const auto p = from + i;
    if (p >= size_) {
      break;
    }
    if (p < prefix_) {  // a run of the prefix
      const auto run = std::min(prefix_ - p, word_bits - i);
      bits |= (run == word_bits ? ~std::uint64_t{0} : ((std::uint64_t{1} << run) - 1)) << i;
      i += run;
      continue;
    }
    const auto offset = p - prefix_;
    const auto word = offset / word_bits;
    if (word >= beyond_.size()) {
      break;
    }
    const auto shift = offset % word_bits;
    const auto take = std::min(word_bits - shift, word_bits - i);
    auto chunk = beyond_[word] >> shift;
    if (take < word_bits) {
      chunk &= (std::uint64_t{1} << take) - 1;
    }
    bits |= chunk << i;
    i += take;
  }
  return bits;
}

void delivered_set::unite(const delivered_set& other) {
  const auto end = std::max(extent(), other.extent());
  if (end <= prefix_) {
    return;
  }
  // From this set's prefix on, the union's words; the prefix stays (it is in both unions).
  std::vector<std::uint64_t> words;
  words.reserve((end - prefix_ + word_bits - 1) / word_bits);
  std::uint64_t added = 0;
  for (auto p = prefix_; p < end; p += word_bits) {
    const auto mine = window(p);
    const auto both = mine | other.window(p);
    added += popcount(both) - popcount(mine);
    words.push_back(both);
  }
  beyond_ = std::move(words);
  count_ += added;
  advance_prefix();
}

bool delivered_set::includes(const delivered_set& other) const {
  if (other.count_ > count_) {
    return false;
  }
  const auto end = other.extent();
  for (auto p = prefix_ - prefix_ % word_bits; p < end; p += word_bits) {
    const auto theirs = other.window(p);
    if ((theirs & ~window(p)) != 0) {
      return false;
    }
  }
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

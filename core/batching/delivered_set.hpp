#pragma once
/// The positions of an epoch's order (core/batching/epoch_order.hpp) whose samples reached a
/// trainer: a prefix (every position below it) plus a bitmap of the positions beyond it. The
/// batcher delivers nearly in order (latency-aware batching reorders only within its window),
/// so the bitmap stays about a window long and a resume state stays small; scattered positions
/// cost at most one bit each.

#include <cstdint>
#include <vector>

namespace conveyor {

class delivered_set {
 public:
  delivered_set() = default;
  /// An empty set over positions 0..size-1.
  explicit delivered_set(std::uint64_t size) : size_(size) {}
  /// A set read back: every position below `prefix`, and position prefix + i for each set bit
  /// i of `beyond` (64 per word, low bit first). Positions past `size` must not be set.
  delivered_set(std::uint64_t size, std::uint64_t prefix, std::vector<std::uint64_t> beyond);

  /// Adds `position` (< size()); false when it was there already.
  bool add(std::uint64_t position);
  /// Adds every position of `other` (over the same size()), word by word: the work is
  /// proportional to the words the two sets store, never to a position one claims.
  void unite(const delivered_set& other);
  /// Whether every position of `other` (over the same size()) is in this set; word by word.
  bool includes(const delivered_set& other) const;
  bool contains(std::uint64_t position) const noexcept;
  std::uint64_t size() const noexcept { return size_; }
  std::uint64_t count() const noexcept { return count_; }
  bool complete() const noexcept { return count_ == size_; }
  /// Every position below it is in the set.
  std::uint64_t prefix() const noexcept { return prefix_; }
  /// The bitmap of the positions from prefix() on, without trailing empty words.
  const std::vector<std::uint64_t>& beyond() const noexcept { return beyond_; }

 private:
  void advance_prefix();
  /// Bit i: position from + i is in the set (positions past size() read as absent).
  std::uint64_t window(std::uint64_t from) const noexcept;
  /// One past the last position the set may hold: prefix() plus the bitmap's bits.
  std::uint64_t extent() const noexcept;

  std::uint64_t size_ = 0;
  std::uint64_t prefix_ = 0;
  std::uint64_t count_ = 0;
  std::vector<std::uint64_t> beyond_;  ///< bit i: position prefix_ + i
};

}  // namespace conveyor

#pragma once
/// The epoch ledger: proves that every sample of an epoch was delivered exactly once, or
/// quarantined with a reason, or filtered out by the recipe (an utterance over its
/// max_duration: not a fault, so counted but not listed). It counts what it is told and judges
/// nothing itself, so it can check the batcher's bookkeeping as well as what a trainer actually
/// received.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace conveyor {

struct quarantine_entry {
  std::uint64_t epoch = 0;
  std::uint64_t sample_id = 0;
  std::string key;     ///< file, or shard and record
  std::string reason;  ///< the error that set it aside
};

struct epoch_summary {
  std::uint64_t delivered = 0;    ///< distinct samples delivered
  std::uint64_t quarantined = 0;  ///< distinct samples quarantined (and not delivered)
  std::uint64_t filtered = 0;     ///< distinct samples the recipe's filter left out
  std::uint64_t duplicates = 0;   ///< deliveries beyond the first of a sample
  std::uint64_t lost = 0;         ///< samples neither delivered, quarantined nor filtered

  epoch_summary& operator+=(const epoch_summary& o) noexcept;
};

/// Single-threaded (owned by one actor or one trainer thread).
class epoch_ledger {
 public:
  /// Sample ids are below `dataset_size`; each epoch is to account for `per_epoch` of them
  /// (a node of a cluster prepares its share; by default, all).
  explicit epoch_ledger(std::uint64_t dataset_size, std::uint64_t per_epoch = ~std::uint64_t{0})
      : dataset_size_(dataset_size), per_epoch_(std::min(per_epoch, dataset_size)) {}

  void deliver(std::uint64_t epoch, std::uint64_t sample_id);
  void quarantine(quarantine_entry entry);
  /// The recipe's filter left the sample out of `epoch`.
  void filter(std::uint64_t epoch, std::uint64_t sample_id);

  /// The summary of one epoch so far (lost counts every sample not yet accounted for).
  epoch_summary summary(std::uint64_t epoch) const;
  /// Sum over every epoch seen.
  epoch_summary totals() const;
  /// True when every sample of `epoch` is delivered, quarantined or filtered.
  bool complete(std::uint64_t epoch) const;
  const std::vector<quarantine_entry>& quarantined() const noexcept { return quarantined_; }

 private:
  enum class mark : std::uint8_t { none, delivered, quarantined, filtered };
  struct epoch_marks {
    std::vector<mark> marks;
    epoch_summary counts;
  };
  epoch_marks& marks_of(std::uint64_t epoch);

  std::uint64_t dataset_size_;
  std::uint64_t per_epoch_;
  std::map<std::uint64_t, epoch_marks> epochs_;
  std::vector<quarantine_entry> quarantined_;
};

}  // namespace conveyor

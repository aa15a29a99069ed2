#pragma once
/// A Python Dataset as the readers see it: each sample an index into it and nothing else. Its
/// bytes are made by its step (python_step.hpp) in a worker process; a reader reads nothing,
/// so that every cost of a sample is where the budget and the hand-off see it. Sample j is
/// dataset[j], or dataset[order[j]] where the trainer's sampler gave the epoch's order
/// (sampler_order.hpp). Its record is keyed "dataset[i]" and its payload is i, 8 bytes
/// little-endian, which the step asks its worker for. Thread-safe (immutable).

#include <cstdint>
#include <string>
#include <vector>

#include "core/storage/sample_source.hpp"

namespace conveyor {

class python_dataset final : public sample_source {
 public:
  /// `length` samples (len(dataset)), sample j being dataset[j]; or, with a non-empty `order`
  /// (each index below `length`: read_sampler_order checks them), order.size() samples,
  /// sample j being dataset[order[j]].
  explicit python_dataset(std::uint64_t length, std::vector<std::uint64_t> order = {})
      : length_(length), order_(std::move(order)) {}

  std::uint64_t size() const noexcept override { return order_.empty() ? length_ : order_.size(); }
  const std::vector<std::string>& class_names() const noexcept override { return no_classes_; }
  std::string locate(std::uint64_t id) const override;
  /// The record of sample `id` (its index as payload, keyed locate(id)). errc::not_found past
  /// the end.
  expected<record> read(std::uint64_t id) const override;
  std::uint64_t stored_bytes(std::uint64_t /*id*/) const override { return 0; }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override { return {}; }

  /// The dataset index of sample `id` (< size()).
  std::uint64_t index_of(std::uint64_t id) const noexcept {
    return order_.empty() ? id : order_[id];
  }

 private:
  std::uint64_t length_;
  std::vector<std::uint64_t> order_;
  std::vector<std::string> no_classes_;
};

}  // namespace conveyor

#pragma once
/// A Python Dataset as the readers see it: `size` samples (len(dataset)), each an index and
/// nothing else. Its bytes are made by its step (python_step.hpp) in a worker process; a
/// reader reads nothing, so that every cost of a sample is where the budget and the hand-off
/// see it. Samples are named "dataset[i]". Thread-safe (immutable).

#include <cstdint>
#include <string>
#include <vector>

#include "core/storage/sample_source.hpp"

namespace conveyor {

class python_dataset final : public sample_source {
 public:
  explicit python_dataset(std::uint64_t size) : size_(size) {}

  std::uint64_t size() const noexcept override { return size_; }
  const std::vector<std::string>& class_names() const noexcept override { return no_classes_; }
  std::string locate(std::uint64_t id) const override;
  /// An empty record keyed locate(id). errc::not_found past the end.
  expected<record> read(std::uint64_t id) const override;
  std::uint64_t stored_bytes(std::uint64_t /*id*/) const override { return 0; }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override { return {}; }

 private:
  std::uint64_t size_;
  std::vector<std::string> no_classes_;
};

}  // namespace conveyor

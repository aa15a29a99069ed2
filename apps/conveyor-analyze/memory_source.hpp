#pragma once
/// A dataset held in memory: records already read, served as a sample_source, so that the
/// node's own pipeline can run on them with no storage in the way (conveyor-analyze's
/// preparation measure, DS-Analyzer's "fully cached" run).

#include <memory>
#include <string>
#include <vector>

#include "core/storage/record.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// Immutable: every method may be called concurrently.
class memory_source final : public sample_source {
 public:
  memory_source(std::vector<record> records, std::vector<std::string> class_names)
      : records_(std::move(records)), class_names_(std::move(class_names)) {}

  std::uint64_t size() const noexcept override { return records_.size(); }
  const std::vector<std::string>& class_names() const noexcept override { return class_names_; }
  std::string locate(std::uint64_t id) const override { return "memory: " + records_[id].key; }
  expected<record> read(std::uint64_t id) const override { return records_[id]; }
  std::uint64_t stored_bytes(std::uint64_t id) const override {
    return records_[id].payload.size();
  }
  std::optional<std::uint64_t> shard_of(std::uint64_t /*id*/) const override {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files() const override { return {}; }
  const std::vector<record>& records() const noexcept { return records_; }

 private:
  std::vector<record> records_;
  std::vector<std::string> class_names_;
};

}  // namespace conveyor

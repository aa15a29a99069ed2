#pragma once
/// A dataset in an object store: record shards or WebDataset tars whose files are objects
/// (remote_store.hpp), read as the local formats are (the same sample ids, records, checks and
/// messages, an object's URL in place of a file's path), and read ahead of the readers
/// (read_ahead.hpp). Opened by open_remote_dataset (open_remote_dataset.hpp).

#include <memory>
#include <string>

#include "core/remote/read_ahead.hpp"
#include "core/remote/remote_store.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {

/// Immutable after open, but for use_cache (once, before reads): every method may be called
/// concurrently.
class remote_dataset final : public sample_source {
 public:
  /// `inner` reads the store's objects (its shards are the store's objects, in order).
  remote_dataset(std::shared_ptr<const sample_source> inner, std::shared_ptr<remote_store> store,
                 std::string url);

  std::uint64_t size() const noexcept override { return inner_->size(); }
  const std::vector<std::string>& class_names() const noexcept override {
    return inner_->class_names();
  }
  std::string locate(std::uint64_t id) const override { return inner_->locate(id); }
  /// A sample whose stored size is past the store's largest_read() (remote_store.hpp) is
  /// refused (io_error, naming it) before a buffer is sized for it: its size comes from what
  /// the store said (a listing's Size, a tar header or an index within it).
  expected<record> read(std::uint64_t id) const override;
  expected<void> check(std::uint64_t id, const record& got) const override {
    return inner_->check(id, got);
  }
  std::uint64_t stored_bytes(std::uint64_t id) const override { return inner_->stored_bytes(id); }
  std::optional<std::uint64_t> shard_of(std::uint64_t id) const override {
    return inner_->shard_of(id);
  }
  /// None: its objects are not files of this machine.
  std::vector<std::filesystem::path> files() const override { return {}; }
  std::vector<storage_extent> extents(std::uint64_t id) const override {
    return inner_->extents(id);
  }
  void will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids) const override;
  void use_cache(std::shared_ptr<const minio_cache> cache) const override;

  /// "s3://bucket/prefix".
  const std::string& url() const noexcept { return url_; }
  const transfer_counters& counters() const noexcept { return *store_->counters(); }
  const remote_store& store() const noexcept { return *store_; }

 private:
  std::shared_ptr<const sample_source> inner_;
  std::shared_ptr<remote_store> store_;
  std::string url_;
  std::unique_ptr<read_ahead> ahead_;
};

}  // namespace conveyor

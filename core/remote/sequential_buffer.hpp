#pragma once
/// A byte source read front to back in small pieces (a tar's member headers, walked when a
/// WebDataset is opened) made of a few large reads: each read that misses the block held brings
/// the block of `block` bytes around it, and the next `ahead` blocks are wanted from the store
/// meanwhile (remote_store::want): the walk over one tar keeps several range GETs in flight.
/// After the walk, stop() drops the block and the blocks fetched ahead, and reads pass through.
/// Thread-safe.

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/remote/remote_store.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

class sequential_buffer final : public byte_source {
 public:
  sequential_buffer(std::shared_ptr<remote_store> store, std::size_t object, int ahead);

  const std::string& name() const noexcept override { return inner_->name(); }
  std::uint64_t size() const noexcept override { return inner_->size(); }
  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override;

  /// Reads from now on pass through; what was fetched ahead is dropped.
  void stop();

 private:
  expected<void> load(std::uint64_t block) const;

  std::shared_ptr<remote_store> store_;
  std::size_t object_;
  int ahead_;
  std::uint64_t block_bytes_;
  std::shared_ptr<const byte_source> inner_;
  std::atomic<bool> buffering_{true};
  mutable std::mutex mutex_;
  mutable std::uint64_t held_ = 0;  ///< the block in `bytes_`
  mutable std::vector<std::uint8_t> bytes_;
  mutable bool holding_ = false;
};

}  // namespace conveyor

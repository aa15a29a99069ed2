#include "core/remote/remote_dataset.hpp"

namespace conveyor {

remote_dataset::remote_dataset(std::shared_ptr<const sample_source> inner,
                               std::shared_ptr<remote_store> store, std::string url)
    : inner_(std::move(inner)),
      store_(std::move(store)),
      url_(std::move(url)),
      ahead_(std::make_unique<read_ahead>(store_, *inner_)) {}

expected<record> remote_dataset::read(std::uint64_t id) const {
  if (id < inner_->size()) {
    if (const auto bytes = inner_->stored_bytes(id); bytes > store_->largest_read()) {
      return error{errc::io_error,
                   inner_->locate(id) + ": a sample of " + store_->too_large(bytes)};
    }
  }
  return inner_->read(id);
}

void remote_dataset::will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids) const {
  ahead_->will_read(epoch, ids);
}

void remote_dataset::use_cache(std::shared_ptr<const minio_cache> cache) const {
  ahead_->use_cache(std::move(cache));
}

}  // namespace conveyor

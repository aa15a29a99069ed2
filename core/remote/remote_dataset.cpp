#include "core/remote/remote_dataset.hpp"

namespace conveyor {

remote_dataset::remote_dataset(std::shared_ptr<const sample_source> inner,
                               std::shared_ptr<remote_store> store, std::string url)
    : inner_(std::move(inner)),
      store_(std::move(store)),
      url_(std::move(url)),
      ahead_(std::make_unique<read_ahead>(store_, *inner_)) {}

void remote_dataset::will_read(std::uint64_t epoch, const std::vector<std::uint64_t>& ids) const {
  ahead_->will_read(epoch, ids);
}

void remote_dataset::use_cache(std::shared_ptr<const minio_cache> cache) const {
  ahead_->use_cache(std::move(cache));
}

}  // namespace conveyor

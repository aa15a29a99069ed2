#include "api/batch_source.hpp"

namespace conveyor {

std::size_t tensor_view::elements() const noexcept {
  std::size_t n = 1;
  for (auto d : shape) {
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

std::size_t tensor_view::bytes() const noexcept {
  return elements() * size_of(type);
}

batch batch_access::make(std::shared_ptr<const host_batch> data, std::shared_ptr<batch_home> home) {
  return batch(std::move(data), std::move(home));
}

std::int64_t batch_access::slot(const batch& b) noexcept {
  return b.data_ ? static_cast<std::int64_t>(b.data_->slot) : -1;
}

batch::batch(std::shared_ptr<const host_batch> data, std::shared_ptr<batch_home> home)
    : data_(std::move(data)), home_(std::move(home)) {}

batch& batch::operator=(batch&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::move(other.data_);
    home_ = std::move(other.home_);
  }
  return *this;
}

batch::~batch() {
  release();
}

void batch::release() noexcept {
  release_after(nullptr);
}

void batch::release_after(cuda_stream_t stream) noexcept {
  if (data_ && home_) {
    if (data_->owner) {  // before the feeder hears of it: the slot's reuse waits for `stream`
      data_->owner->released(data_->slot, consumer_stream{stream});
    }
    home_->give_back(*data_);
  }
  data_.reset();
  home_.reset();
}

tensor_view batch::tensor() const noexcept {
  if (!data_) {
    return {};
  }
  const auto& s = data_->shape;
  // The buffer is the trainer's while it holds the batch: the feeder made it writable and
  // touches it again only after release. host_batch is const only to the channel's readers.
  const void* data = data_->device >= 0 ? data_->device_data
                     : data_->external  ? data_->external
                                        : data_->bytes.data();
  return {data_->type, {s[0], s[1], s[2], s[3]}, const_cast<void*>(data), data_->device};
}

bool batch::writable() const noexcept {
  return data_ && !data_->read_only;
}

namespace {
template <class T>
const std::vector<T>& or_empty(const std::shared_ptr<const host_batch>& b,
                               const std::vector<T> host_batch::*member) {
  static const std::vector<T> empty;
  return b ? (*b).*member : empty;
}
}  // namespace

const std::vector<std::int32_t>& batch::labels() const noexcept {
  return or_empty(data_, &host_batch::labels);
}
const std::vector<std::uint64_t>& batch::sample_ids() const noexcept {
  return or_empty(data_, &host_batch::sample_ids);
}
const std::vector<std::string>& batch::keys() const noexcept {
  return or_empty(data_, &host_batch::keys);
}
std::uint64_t batch::epoch() const noexcept {
  return data_ ? data_->epoch : 0;
}
std::uint64_t batch::index() const noexcept {
  return data_ ? data_->index : 0;
}
int batch::gpu() const noexcept {
  return data_ ? data_->gpu : 0;
}
std::size_t batch::size() const noexcept {
  return data_ ? data_->size() : 0;
}
std::uint64_t batch::ready_ns() const noexcept {
  return data_ ? data_->ready_ns : 0;
}
bool batch::last_in_epoch() const noexcept {
  return data_ && data_->last_in_epoch;
}

}  // namespace conveyor

#include "api/batch_source.hpp"

#include <algorithm>

namespace conveyor {
namespace {

constexpr std::string_view image_field_view_name = "image";

}  // namespace

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

const std::uint8_t* batch_access::host_buffer(const batch& b) noexcept {
  return b.data_ ? b.data_->host() : nullptr;
}

std::vector<batch_field> batch_access::fields(const batch& b) {
  return b.data_ ? b.data_->fields : std::vector<batch_field>{};
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
    home_->give_back(*data_, consumer_stream{stream});
  }
  data_.reset();
  home_.reset();
}

std::size_t field_view::elements() const noexcept {
  std::size_t n = 1;
  for (int i = 0; i < rank; ++i) {
    n *= static_cast<std::size_t>(shape[static_cast<std::size_t>(i)]);
  }
  return n;
}

std::size_t field_view::byte_count() const noexcept {
  return elements() * size_of(type);
}

namespace {

// The view of field `i` of `b`. The buffer is the trainer's while it holds the batch: the
// feeder made it writable and touches it again only after release; host_batch is const only to
// the channel's readers.
field_view view_of(const host_batch& b, std::size_t i) {
  const auto& spec = b.schema->fields[i];
  const auto& f = b.fields[i];
  field_view v;
  v.name = spec.name;
  v.type = b.type_of(i);
  v.bytes = spec.type.kind == field_kind::bytes;
  v.mode = static_cast<collate>(spec.collate.mode);
  v.rank = f.rank;
  std::copy(f.shape.begin(), f.shape.end(), v.shape.begin());
  v.samples = f.samples;
  v.data = f.samples > 0 ? const_cast<void*>(b.values_of(i)) : nullptr;
  v.device = b.device;
  if (spec.collate.mode == collate_mode::pad && f.samples > 0) {
    v.lengths = reinterpret_cast<const std::int32_t*>(b.host() + f.lengths);
    v.length_axes = f.length_axes;
  }
  if (spec.collate.mode == collate_mode::ragged && f.samples > 0) {
    v.offsets = reinterpret_cast<const std::int64_t*>(b.host() + f.offsets);
  }
  return v;
}

}  // namespace

std::optional<field_view> batch::field(std::string_view name) const noexcept {
  if (!data_ || !data_->schema) {
    return std::nullopt;
  }
  auto i = data_->schema->index_of(name);
  if (!i || *i >= data_->fields.size()) {
    return std::nullopt;
  }
  return view_of(*data_, *i);
}

std::vector<field_view> batch::fields() const {
  std::vector<field_view> out;
  if (data_ && data_->schema) {
    for (std::size_t i = 0; i < data_->fields.size(); ++i) {
      out.push_back(view_of(*data_, i));
    }
  }
  return out;
}

tensor_view batch::tensor() const noexcept {
  auto image = field(image_field_view_name);
  if (!image || image->rank != 4) {
    return {};
  }
  const auto& s = image->shape;
  return {image->type, {s[0], s[1], s[2], s[3]}, image->data, image->device};
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

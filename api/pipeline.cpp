#include "conveyor/pipeline.hpp"

#include "actors/pipeline_runtime.hpp"
#include "api/resolve_topology.hpp"
#include "config/load_topology.hpp"
#include "core/host_batch.hpp"

namespace conveyor {

std::size_t tensor_view::bytes() const noexcept {
  std::size_t n = size_of(type);
  for (auto d : shape) {
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

// --- batch -------------------------------------------------------------------------------

batch::batch(std::shared_ptr<const host_batch> data, std::shared_ptr<pipeline_runtime> runtime)
    : data_(std::move(data)), runtime_(std::move(runtime)) {}

batch& batch::operator=(batch&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::move(other.data_);
    runtime_ = std::move(other.runtime_);
  }
  return *this;
}

batch::~batch() {
  release();
}

void batch::release() noexcept {
  if (data_ && runtime_) {
    runtime_->release(data_->gpu, data_->slot);
  }
  data_.reset();
  runtime_.reset();
}

tensor_view batch::tensor() const noexcept {
  if (!data_) {
    return {};
  }
  const auto& s = data_->shape;
  const void* data = data_->device >= 0 ? data_->device_data : data_->bytes.data();
  return {data_->type, {s[0], s[1], s[2], s[3]}, data, data_->device};
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
int batch::gpu() const noexcept {
  return data_ ? data_->gpu : 0;
}
std::size_t batch::size() const noexcept {
  return data_ ? data_->size() : 0;
}
bool batch::last_in_epoch() const noexcept {
  return data_ && data_->last_in_epoch;
}

// --- pipeline ----------------------------------------------------------------------------

pipeline::pipeline(std::shared_ptr<pipeline_runtime> runtime)
    : runtime_(std::move(runtime)),
      epochs_ended_(static_cast<std::size_t>(runtime_->spec().settings.gpus), 0) {}
pipeline::pipeline(pipeline&&) noexcept = default;
pipeline& pipeline::operator=(pipeline&&) noexcept = default;
pipeline::~pipeline() {
  shutdown();
}

expected<pipeline> pipeline::open(const std::filesystem::path& topology_file,
                                  const std::vector<std::string>& overrides) {
  auto t = load_topology_file(topology_file, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create(*t);
}

expected<pipeline> pipeline::create(const topology& t) {
  auto spec = resolve_topology(t);
  if (!spec) {
    return std::move(spec).error();
  }
  return pipeline(std::make_shared<pipeline_runtime>(std::move(*spec)));
}

int pipeline::gpus() const noexcept {
  return runtime_->spec().settings.gpus;
}
std::uint64_t pipeline::epochs() const noexcept {
  return runtime_->spec().settings.epochs;
}
std::uint64_t pipeline::dataset_size() const noexcept {
  return runtime_->spec().settings.dataset_size;
}

pipeline_info pipeline::info() const {
  const auto& spec = runtime_->spec();
  const auto& s = spec.settings;
  return {s.gpus,
          s.workers,
          spec.readers,
          s.epochs,
          s.dataset_size,
          s.batch_size,
          spec.prefetch_batches,
          s.window_samples,
          std::string(to_string(spec.policy))};
}

expected<batch> pipeline::next(int gpu) {
  if (gpu < 0 || gpu >= gpus()) {
    return error{errc::invalid_argument, "gpu " + std::to_string(gpu) + " is not one of the " +
                                             std::to_string(gpus()) + " of this pipeline"};
  }
  auto& ended = epochs_ended_[static_cast<std::size_t>(gpu)];
  auto data = ended < epochs() ? runtime_->status()->channel(gpu)->pop() : nullptr;
  if (!data) {
    if (auto f = failure()) {
      return *f;
    }
    return error{errc::not_found, "no more batches for gpu " + std::to_string(gpu)};
  }
  ended += data->last_in_epoch ? 1 : 0;
  return batch(std::move(data), runtime_);
}

pipeline::epoch_range pipeline::epoch(std::uint64_t epoch, int gpu) {
  return epoch_range(this, epoch, gpu);
}

namespace {

double mean_ms(std::int64_t total_ns, std::uint64_t samples) {
  return samples == 0 ? 0.0 : static_cast<double>(total_ns) / 1e6 / static_cast<double>(samples);
}

// Mean milliseconds per sample: read, each transform step, collate.
std::vector<std::pair<std::string, double>> time_breakdown(const pipeline_runtime& rt,
                                                           const pipeline_figures& f) {
  const auto& status = *rt.status();
  const auto& chain = rt.spec().chain;
  std::vector<std::pair<std::string, double>> out;
  // Every read is followed by one prepared sample or a failure: per prepared sample is close.
  out.emplace_back("read", mean_ms(status.read_ns(), f.prepared));
  for (std::size_t i = 0; i < f.step_ns.size() && i < chain.size(); ++i) {
    out.emplace_back(std::string(chain.step(i).name()), mean_ms(f.step_ns[i], f.prepared));
  }
  out.emplace_back("collate", mean_ms(status.collate_ns(), status.collated()));
  return out;
}

}  // namespace

pipeline_report pipeline::report() const {
  auto f = runtime_->status()->figures();
  pipeline_report r;
  r.delivered = f.totals.delivered;
  r.quarantined = f.totals.quarantined;
  r.duplicates = f.totals.duplicates;
  r.lost = f.totals.lost;
  r.peak_in_flight = f.peak_in_flight;
  r.handoffs = f.handoffs;
  r.early_handoffs = runtime_->status()->early_handoffs();
  r.steps_executed = runtime_->status()->steps_executed();
  r.retries = f.retries;
  r.restarts = runtime_->status()->restarts();
  r.hangs = runtime_->status()->hangs();
  r.time_per_sample_ms = time_breakdown(*runtime_, f);
  r.finished = f.finished;
  for (const auto& q : f.quarantined) {
    r.quarantined_samples.push_back("epoch " + std::to_string(q.epoch) + " " + q.key + ": " +
                                    q.reason);
  }
  return r;
}

std::optional<error> pipeline::failure() const {
  return runtime_->status()->failure();
}

void pipeline::shutdown() {
  if (runtime_) {
    runtime_->stop();
  }
}

// --- epoch_range -------------------------------------------------------------------------

void pipeline::epoch_range::advance() {
  current_.release();
  while (!saw_last_) {
    auto next = owner_->next(gpu_);
    if (!next || next->epoch() != epoch_) {
      break;  // stopped, or the caller asked for an epoch out of turn
    }
    saw_last_ = next->last_in_epoch();
    if (next->size() > 0) {
      current_ = std::move(*next);
      return;
    }
  }
  done_ = true;
}

pipeline::epoch_range::iterator pipeline::epoch_range::begin() {
  if (!started_) {
    started_ = true;
    advance();
  }
  return iterator(this);
}

pipeline::epoch_range::iterator& pipeline::epoch_range::iterator::operator++() {
  range_->advance();
  return *this;
}

}  // namespace conveyor

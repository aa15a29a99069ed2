#include "conveyor/pipeline.hpp"

#include "actors/pipeline_runtime.hpp"
#include "api/create_pipeline.hpp"
#include "api/resolve_topology.hpp"
#include "config/load_topology.hpp"
#include "core/base/log.hpp"
#include "core/delivery/host_batch.hpp"

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
  // The buffer is the trainer's while it holds the batch: the feeder made it writable and
  // touches it again only after release. host_batch is const only to the channel's readers.
  const void* data = data_->device >= 0 ? data_->device_data : data_->bytes.data();
  return {data_->type, {s[0], s[1], s[2], s[3]}, const_cast<void*>(data), data_->device};
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

/// What a pipeline and its epoch ranges share: the ranges stay valid when the pipeline moves.
struct pipeline::state {
  std::shared_ptr<pipeline_runtime> runtime;
  /// Epochs each GPU has finished; element g is touched only by GPU g's thread.
  std::vector<std::uint64_t> epochs_ended;
};

pipeline::pipeline(std::shared_ptr<pipeline_runtime> runtime) : state_(std::make_shared<state>()) {
  state_->epochs_ended.assign(static_cast<std::size_t>(runtime->spec().settings.gpus), 0);
  state_->runtime = std::move(runtime);
}
pipeline::pipeline(pipeline&&) noexcept = default;
pipeline& pipeline::operator=(pipeline&& other) noexcept {
  if (this != &other) {
    shutdown();
    state_ = std::move(other.state_);
  }
  return *this;
}
pipeline::~pipeline() {
  shutdown();
}

expected<pipeline> pipeline::open(const std::filesystem::path& topology_file,
                                  const std::vector<std::string>& overrides) {
  auto t = load_topology_file(topology_file, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t);
}

expected<pipeline> pipeline::from_toml(std::string_view toml,
                                       const std::vector<std::string>& overrides) {
  auto t = load_topology_string(toml, "", overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t);
}

expected<pipeline> create_pipeline(const topology& t) {
  auto spec = resolve_topology(t);
  if (!spec) {
    return std::move(spec).error();
  }
  return pipeline(std::make_shared<pipeline_runtime>(std::move(*spec)));
}

int pipeline::gpus() const noexcept {
  return state_->runtime->spec().settings.gpus;
}
std::uint64_t pipeline::epochs() const noexcept {
  return state_->runtime->spec().settings.epochs;
}
std::uint64_t pipeline::dataset_size() const noexcept {
  return state_->runtime->spec().settings.dataset_size;
}

pipeline_info pipeline::info() const {
  const auto& spec = state_->runtime->spec();
  const auto& s = spec.settings;
  return {s.gpus,
          s.workers,
          spec.readers,
          s.epochs,
          s.dataset_size,
          s.batch_size,
          spec.prefetch_batches,
          s.window_samples,
          std::string(to_string(spec.policy)),
          spec.source->class_names(),
          std::chrono::duration<double>(spec.next_timeout).count()};
}

namespace {

std::string gpu_name(int gpu) {
  return "gpu " + std::to_string(gpu);
}

// `gpu` is one of the pipeline's `gpus`, or the error that says it is not.
std::optional<error> check_gpu(int gpu, int gpus) {
  if (gpu >= 0 && gpu < gpus) {
    return std::nullopt;
  }
  return error{errc::invalid_argument,
               gpu_name(gpu) + " is not one of the " + std::to_string(gpus) + " of this pipeline"};
}

// Why next() found no batch: the channel was closed, every buffer is held, or time ran out.
error no_batch(const pipeline_runtime& rt, int gpu, batch_channel::outcome why) {
  const auto& spec = rt.spec();
  const auto buffers = std::to_string(spec.prefetch_batches + 1);
  const auto held = std::to_string(rt.status()->channel(gpu)->held());
  switch (why) {
    case batch_channel::outcome::all_held:
      return {errc::resource_exhausted,
              gpu_name(gpu) + ": the trainer holds all " + buffers +
                  " batch buffers of this GPU (pipeline.prefetch_batches + 1), so no batch can "
                  "come: release one (batch::release(), or let it go) before asking for the "
                  "next, or raise pipeline.prefetch_batches"};
    case batch_channel::outcome::timed_out:
      return {errc::timed_out,
              gpu_name(gpu) + ": no batch within pipeline.next_timeout_s = " +
                  std::to_string(std::chrono::duration<double>(spec.next_timeout).count()) +
                  " s (the trainer holds " + held + " of " + buffers +
                  " buffers; every GPU's batches must be taken concurrently, one thread per "
                  "GPU: the GPUs advance together)"};
    default:
      return {errc::not_found, "no more batches for " + gpu_name(gpu) + " (shut down)"};
  }
}

}  // namespace

expected<batch> pipeline::next(int gpu) {
  if (auto bad = check_gpu(gpu, gpus())) {
    return *bad;
  }
  return next_of(*state_, gpu);
}

expected<batch> pipeline::next_of(state& s, int gpu) {
  const auto& rt = *s.runtime;
  auto& ended = s.epochs_ended[static_cast<std::size_t>(gpu)];
  if (auto f = rt.status()->failure()) {
    return *f;
  }
  if (ended >= rt.spec().settings.epochs) {
    return error{errc::not_found, "no more batches for " + gpu_name(gpu) + ": its " +
                                      std::to_string(ended) + " epochs have ended"};
  }
  const auto& channel = rt.status()->channel(gpu);
  if (channel->closed()) {  // shut down: batches still queued are not handed out
    return no_batch(rt, gpu, batch_channel::outcome::closed);
  }
  auto got = channel->pop_until(batch_channel::clock::now() + rt.spec().next_timeout);
  if (!got.batch) {
    if (auto f = rt.status()->failure()) {
      return *f;
    }
    return no_batch(rt, gpu, got.status);
  }
  ended += got.batch->last_in_epoch ? 1 : 0;
  return batch(std::move(got.batch), s.runtime);
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
  const auto& rt = state_->runtime;
  auto f = rt->status()->figures();
  pipeline_report r;
  r.delivered = f.totals.delivered;
  r.quarantined = f.totals.quarantined;
  r.duplicates = f.totals.duplicates;
  r.lost = f.totals.lost;
  r.peak_in_flight = f.peak_in_flight;
  r.handoffs = f.handoffs;
  r.early_handoffs = rt->status()->early_handoffs();
  r.steps_executed = rt->status()->steps_executed();
  r.retries = f.retries;
  r.restarts = rt->status()->restarts();
  r.hangs = rt->status()->hangs();
  r.time_per_sample_ms = time_breakdown(*rt, f);
  r.finished = f.finished;
  for (const auto& q : f.quarantined) {
    r.quarantined_samples.push_back("epoch " + std::to_string(q.epoch) + " " + q.key + ": " +
                                    q.reason);
  }
  return r;
}

std::optional<error> pipeline::failure() const {
  return state_->runtime->status()->failure();
}

void pipeline::shutdown() {
  if (state_) {
    state_->runtime->stop();
  }
}

// --- epoch_range -------------------------------------------------------------------------

/// One epoch of one GPU being walked. The range and its iterators share it, so an iterator
/// outlives the range expression it came from.
struct pipeline::epoch_range::cursor {
  cursor(std::shared_ptr<pipeline::state> s, std::uint64_t e, int g)
      : shared(std::move(s)), epoch(e), gpu(g) {}

  /// Releases the current batch and takes the next non-empty one of the epoch.
  void advance();
  /// Ends the range with `why`, logged: a loop over the range would otherwise end silently.
  void stop(conveyor::error why);
  /// The range may start (or go on): the GPU is in this epoch.
  bool in_turn();

  std::shared_ptr<pipeline::state> shared;
  std::uint64_t epoch;
  int gpu;
  batch current;
  bool started = false;
  bool done = false;
  bool complete = false;
  std::optional<conveyor::error> failure;
};

void pipeline::epoch_range::cursor::stop(conveyor::error why) {
  log("pipeline")->error("epoch({}, {}): {}", epoch, gpu, why.what());
  failure = std::move(why);
  done = true;
}

bool pipeline::epoch_range::cursor::in_turn() {
  const auto& rt = *shared->runtime;
  if (auto bad = check_gpu(gpu, rt.spec().settings.gpus)) {
    stop(std::move(*bad));
    return false;
  }
  auto ended = shared->epochs_ended[static_cast<std::size_t>(gpu)];
  if (ended == epoch) {
    return true;
  }
  if (epoch >= rt.spec().settings.epochs) {
    stop({errc::not_found,
          "the pipeline runs " + std::to_string(rt.spec().settings.epochs) + " epochs"});
  } else if (ended < epoch) {
    stop({errc::invalid_argument,
          gpu_name(gpu) + " is still in epoch " + std::to_string(ended) +
              ": finish it first (its remaining batches are kept, none was taken)"});
  } else {
    stop({errc::invalid_argument, "epoch " + std::to_string(epoch) + " of " + gpu_name(gpu) +
                                      " has ended (the GPU is in epoch " + std::to_string(ended) +
                                      ")"});
  }
  return false;
}

void pipeline::epoch_range::cursor::advance() {
  current.release();
  while (!done && in_turn()) {
    auto next = pipeline::next_of(*shared, gpu);
    if (!next) {
      stop(std::move(next).error());
      return;
    }
    complete = next->last_in_epoch();
    done = complete;
    if (next->size() > 0) {
      current = std::move(*next);
      return;
    }
  }
  done = true;
}

pipeline::epoch_range pipeline::epoch(std::uint64_t epoch, int gpu) {
  auto at = std::make_shared<epoch_range::cursor>(state_, epoch, gpu);
  at->in_turn();  // an out-of-turn range says so in error() before it is iterated
  return epoch_range(std::move(at));
}

pipeline::epoch_range::iterator pipeline::epoch_range::begin() {
  if (!at_->started) {
    at_->started = true;
    at_->advance();
  }
  return iterator(at_);
}

std::optional<error> pipeline::epoch_range::error() const {
  return at_->failure;
}

bool pipeline::epoch_range::complete() const noexcept {
  return at_->complete;
}

batch& pipeline::epoch_range::iterator::operator*() const noexcept {
  return at_->current;
}

bool pipeline::epoch_range::iterator::at_end() const noexcept {
  return at_ == nullptr || (at_->done && at_->current.size() == 0);
}

pipeline::epoch_range::iterator& pipeline::epoch_range::iterator::operator++() {
  at_->advance();
  return *this;
}

}  // namespace conveyor

#include "conveyor/pipeline.hpp"

#include "actors/pipeline_runtime.hpp"
#include "api/batch_source.hpp"
#include "api/create_pipeline.hpp"
#include "api/gpu_decoding.hpp"
#include "api/resolve_topology.hpp"
#include "core/base/log.hpp"
#include "core/batching/delivery_tracker.hpp"
#include "core/delivery/host_batch.hpp"
#include "core/remote/remote_dataset.hpp"

#include <map>
#include <string_view>

namespace conveyor {

// --- pipeline ----------------------------------------------------------------------------

namespace {

// Released batches go back to their feeder.
class runtime_home final : public batch_home {
 public:
  explicit runtime_home(std::shared_ptr<pipeline_runtime> runtime) : runtime_(std::move(runtime)) {}
  void give_back(const host_batch& b, consumer_stream) noexcept override {
    runtime_->release(b.gpu, b.slot);  // the ring's owner ordered the reuse after the stream
  }

 private:
  std::shared_ptr<pipeline_runtime> runtime_;
};

}  // namespace

/// What a pipeline and its epoch ranges share: the ranges stay valid when the pipeline moves.
struct pipeline::shared_state {
  std::shared_ptr<pipeline_runtime> runtime;
  std::shared_ptr<batch_home> home;  ///< where its batches are released to
  /// Epochs each GPU has finished; element g is touched only by GPU g's thread.
  std::vector<std::uint64_t> epochs_ended;
  /// What the GPUs received, for state().
  std::unique_ptr<delivery_tracker> delivered;
};

namespace {

// Where a pipeline of `s` starts: its resume state, or a fresh one naming the run.
resume_state starting_point(const batcher_settings& s) {
  if (s.resume) {
    return *s.resume;
  }
  return {s.dataset_size, s.seed, s.order, s.epochs, 0, {}};
}

}  // namespace

pipeline::pipeline(std::shared_ptr<pipeline_runtime> runtime)
    : state_(std::make_shared<shared_state>()) {
  const auto& settings = runtime->spec().settings;
  auto start = starting_point(settings);
  state_->epochs_ended.assign(static_cast<std::size_t>(settings.gpus), start.first_epoch);
  state_->delivered = std::make_unique<delivery_tracker>(std::move(start), settings.gpus);
  state_->home = std::make_shared<runtime_home>(runtime);
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
  auto t = load_topology_file_to_run(topology_file, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t);
}

expected<pipeline> pipeline::from_toml(std::string_view toml,
                                       const std::vector<std::string>& overrides) {
  auto t = load_topology_string_to_run(toml, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t);
}

namespace {

constexpr const char* given_state = "the state given to open()";

}  // namespace

expected<pipeline> pipeline::open(const std::filesystem::path& topology_file,
                                  const std::vector<std::string>& overrides,
                                  const run_state& resume) {
  auto t = load_topology_file_to_run(topology_file, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t, {{}, &resume, given_state, nullptr, nullptr, nullptr});
}

expected<pipeline> pipeline::from_toml(std::string_view toml,
                                       const std::vector<std::string>& overrides,
                                       const run_state& resume) {
  auto t = load_topology_string_to_run(toml, overrides);
  if (!t) {
    return std::move(t).error();
  }
  return create_pipeline(*t, {{}, &resume, given_state, nullptr, nullptr, nullptr});
}

namespace {

// The decoded `resume`, checked to be a state of the run `s` describes.
expected<std::shared_ptr<const resume_state>> resume_of(const run_state& resume,
                                                        const std::string& source,
                                                        const batcher_settings& s) {
  auto state = decode_for_run(resume.bytes, source, s.dataset_size, s.seed, s.order, s.epochs);
  if (!state) {
    return std::move(state).error();
  }
  return std::make_shared<const resume_state>(std::move(*state));
}

}  // namespace

expected<pipeline> create_pipeline(const topology& t, pipeline_opening how) {
  auto spec = resolve_topology(t, std::move(how.dataset), std::move(how.fields));
  if (!spec) {
    return std::move(spec).error();
  }
  if (how.resume != nullptr) {
    spec->settings.dataset_size = spec->source->size();
    auto from = resume_of(*how.resume, how.resume_source, spec->settings);
    if (!from) {
      return std::move(from).error();
    }
    spec->settings.resume = std::move(*from);
  }
  spec->feed_memory = std::move(how.feed_memory);
  spec->served_waits = std::move(how.served_waits);
  auto runtime = std::make_shared<pipeline_runtime>(std::move(*spec));
  if (const auto& failed = runtime->startup_error()) {
    return *failed;
  }
  return pipeline(std::move(runtime));
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
          std::chrono::duration<double>(spec.next_timeout).count(),
          s.resume ? s.resume->first_epoch : 0,
          s.resume ? s.resume->delivered_count() : 0,
          s.seed,
          to_string(s.order.mode),
          s.order.block,
          s.order.span,
          s.share.size(s.dataset_size),
          state_->runtime->metrics_port()};
}

run_state pipeline::state() const {
  return {encode(state_->delivered->state())};
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

std::string seconds(std::chrono::milliseconds wait) {
  return std::to_string(std::chrono::duration<double>(wait).count()) + " s";
}

// Why next() found no batch in `wait`: the channel was closed, every buffer is held, or time
// ran out.
error no_batch(const pipeline_runtime& rt, int gpu, batch_channel::outcome why,
               std::chrono::milliseconds wait) {
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
              gpu_name(gpu) + ": no batch within " +
                  (wait == spec.next_timeout ? "pipeline.next_timeout_s = " : "") + seconds(wait) +
                  " (the trainer holds " + held + " of " + buffers +
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
  return next_of(*state_, gpu, state_->runtime->spec().next_timeout);
}

expected<batch> pipeline::next_for(int gpu, std::chrono::milliseconds wait) {
  if (auto bad = check_gpu(gpu, gpus())) {
    return *bad;
  }
  return next_of(*state_, gpu, wait);
}

expected<batch> pipeline::next_of(shared_state& s, int gpu, std::chrono::milliseconds wait) {
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
    return no_batch(rt, gpu, batch_channel::outcome::closed, wait);
  }
  auto got = channel->pop_until(batch_channel::clock::now() + wait);
  if (!got.batch) {
    if (auto f = rt.status()->failure()) {
      return *f;
    }
    return no_batch(rt, gpu, got.status, wait);
  }
  ended += got.batch->last_in_epoch ? 1 : 0;
  const auto& b = *got.batch;
  s.delivered->record(gpu, b.epoch, b.sample_ids, b.last_in_epoch);
  return batch_access::make(std::move(got.batch), s.home);
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
  std::map<std::string_view, int> seen;  // a second decode is "decode.2": keys stay unique
  for (std::size_t i = 0; i < f.step_ns.size() && i < chain.size(); ++i) {
    auto name = chain.step(i).name();
    auto n = ++seen[name];
    out.emplace_back(std::string(name) + (n > 1 ? "." + std::to_string(n) : ""),
                     mean_ms(f.step_ns[i], f.prepared));
  }
  out.emplace_back("collate", mean_ms(status.collate_ns(), status.collated()));
  return out;
}

// The traffic with the object store a dataset in one was read from (nothing for local files).
void add_store_traffic(const sample_source& source, pipeline_report& r) {
  const auto* remote = dynamic_cast<const remote_dataset*>(&source);
  if (remote == nullptr) {
    return;
  }
  std::uint64_t served = 0;
  for (const auto& e : remote->counters().by_epoch()) {
    served += e.requests;
    r.epoch_s3_requests.push_back(e.requests);
    r.epoch_s3_bytes.push_back(e.bytes);
    r.epoch_s3_fetch_s.push_back(e.requests > 0 ? e.last_end_s - e.first_start_s : 0.0);
  }
  const auto t = remote->counters().snapshot();
  r.s3_attempts = t.requests;
  r.s3_retries = t.retries;
  r.s3_open_requests = t.requests - t.retries - served;  // each request once, less the epochs'

  for (std::size_t f = 1; f < t.by_failure.size(); ++f) {
    r.s3_failures.emplace_back(to_string(static_cast<s3_failure>(f)),
                               static_cast<double>(t.by_failure[f]));
  }
}

}  // namespace

pipeline_report pipeline::report() const {
  const auto& rt = state_->runtime;
  auto f = rt->status()->figures();
  pipeline_report r;
  r.delivered = f.totals.delivered;
  r.quarantined = f.totals.quarantined;
  r.filtered = f.totals.filtered;
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
  if (f.sample_work.count > 0) {
    const auto& w = f.sample_work;
    r.sample_ms.emplace_back("samples", static_cast<double>(w.count));
    for (const auto& [name, ns] :
         {std::pair{"mean", w.mean}, std::pair{"p50", w.p50}, std::pair{"p90", w.p90},
          std::pair{"p99", w.p99}, std::pair{"max", w.max}}) {
      r.sample_ms.emplace_back(name, static_cast<double>(ns) / 1e6);
    }
  }
  r.finished = f.finished;
  for (const auto& e : rt->status()->reads().by_epoch()) {
    r.epoch_cache_hits.push_back(e.cache_hits);
    r.epoch_disk_hits.push_back(e.disk_hits);
    r.epoch_storage_reads.push_back(e.storage_reads);
    r.epoch_storage_bytes.push_back(e.storage_bytes);
    r.epoch_peer_fetches.push_back(e.peer_fetches);
    r.epoch_peer_bytes.push_back(e.peer_bytes);
    r.epoch_peer_fallbacks.push_back(e.peer_fallbacks);
    r.epoch_peer_served.push_back(e.peer_served);
  }
  if (const auto& cache = rt->spec().cache) {
    r.cached_samples = cache->cached_samples();
    r.cached_bytes = cache->cached_bytes();
    r.cached_disk_bytes = cache->disk_bytes();
  }
  add_store_traffic(*rt->spec().source, r);
  r.failed_peers = rt->failed_peers();
  auto tally = rt->status()->bottlenecks();
  r.trainer_samples_per_s = tally.trainer_rate().value_or(0.0);
  if (tally.total_s() > 0) {
    r.bottleneck = std::string(analysis::to_string(tally.dominant()));
    auto shares = tally.shares();
    for (std::size_t i = 0; i < shares.size(); ++i) {
      r.bottleneck_shares.emplace_back(
          std::string(analysis::to_string(analysis::all_bottlenecks[i])), shares[i]);
    }
  }
  if (auto tuned = rt->status()->tuning()) {
    const auto& [t, changes] = *tuned;
    r.autotune_changes = changes;
    r.autotune_counts = {{"preprocessors", t.preprocessors},
                         {"stragglers", t.stragglers},
                         {"readers", t.readers},
                         {"window", static_cast<double>(t.window)}};
    if (const auto& plan = rt->spec().autotune) {
      r.autotune_counts.emplace_back("window_bound", static_cast<double>(plan->most.window));
    }
  }
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

// --- epoch ranges ------------------------------------------------------------------------

/// One GPU's batches, for an epoch range.
struct pipeline::gpu_stream : batch_stream {
  gpu_stream(std::shared_ptr<pipeline::shared_state> s, int g) : shared(std::move(s)), gpu(g) {}

  expected<batch> next() override {
    return pipeline::next_of(*shared, gpu, shared->runtime->spec().next_timeout);
  }
  std::uint64_t epochs_ended() const override {
    return shared->epochs_ended[static_cast<std::size_t>(gpu)];
  }
  std::uint64_t epochs() const override { return shared->runtime->spec().settings.epochs; }
  std::string name() const override { return gpu_name(gpu); }

  std::shared_ptr<pipeline::shared_state> shared;
  int gpu;
};

pipeline::epoch_range pipeline::epoch(std::uint64_t epoch, int gpu) {
  return batch_access::range(std::make_shared<gpu_stream>(state_, gpu), epoch,
                             check_gpu(gpu, gpus()));
}

}  // namespace conveyor

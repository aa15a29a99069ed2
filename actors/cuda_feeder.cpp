#include "actors/cuda_feeder.hpp"

#include <caf/all.hpp>

#include "core/base/log.hpp"
#include "core/base/monotonic_clock.hpp"
#include "core/cuda/device_feeder.hpp"

namespace conveyor {
namespace {

struct cuda_feeder_state {
  static inline const char* name = "cuda-feeder";
  std::optional<cuda::device_feeder> device;         ///< empty when CUDA could not set it up
  std::vector<std::shared_ptr<host_batch>> batches;  ///< per slot: what the trainer reads
  std::unique_ptr<actor_metrics> metrics;  ///< per batch: writing samples and queueing the copy
};

using cuda_feeder_pointer = feeder_actor::stateful_pointer<cuda_feeder_state>;

cuda::device_feeder_options device_options(const cuda_feeder_options& opts) {
  cuda::device_feeder_options d;
  d.device = opts.device;
  d.slots = opts.feeder.slots;
  if (opts.normalize) {
    d.normalize = coefficients_of(*opts.normalize);
    d.normalized_type = opts.normalized_type;
  }
  return d;
}

/// The layout of `plan` in a slot (zeros for an empty plan). Tensors are CHW (host_tensor).
cuda::batch_layout layout_of(const batch_plan& plan) {
  cuda::batch_layout l;
  if (!plan.samples.empty()) {
    const auto& t = plan.samples.front()->tensor;
    l = {t.type,           static_cast<int>(plan.samples.size()), t.channels, t.height, t.width,
         pixel_layout::chw};
  }
  return l;
}

void fail(const cuda_feeder_options& opts, error reason) {
  log("feeder")->error("{}", reason.what());
  opts.feeder.status->fail(std::move(reason));
}

/// Writes the plan into a slot and queues it; the stream hands the batch to the trainer once
/// it is complete on the device.
expected<void> feed(cuda_feeder_state& st, const cuda_feeder_options& opts,
                    const batch_plan& plan) {
  if (auto ok = check_uniform(plan); !ok) {
    return ok;
  }
  auto slot = st.device->acquire(layout_of(plan));
  if (!slot) {
    return std::move(slot).error();
  }
  const auto index = (*slot)->index();
  write_samples(plan, (*slot)->sample(0));
  auto& batch = st.batches[index];
  describe_batch(plan, *batch);
  auto out = (*slot)->output();
  batch->slot = index;
  batch->device = out.device;
  batch->device_data = out.data;
  batch->type = out.type;
  batch->bytes.clear();
  return st.device->submit(**slot, [channel = opts.feeder.channel, batch] {
    batch->ready_ns = monotonic_ns();
    channel->push(batch);
  });
}

void on_plan(cuda_feeder_pointer self, const cuda_feeder_options& opts, const batch_plan& plan) {
  auto& st = self->state;
  if (!st.device) {
    return;  // the pipeline has already failed
  }
  auto start = std::chrono::steady_clock::now();
  if (auto ok = feed(st, opts, plan); !ok) {
    fail(opts, error{ok.error().code(),
                     "feeder " + std::to_string(opts.feeder.gpu) + ": " + ok.error().message()});
    return;
  }
  auto took = elapsed_ns(start);
  opts.feeder.status->add_collate(took, plan.samples.size());  // the copy into the slot
  st.metrics->record(took);
}

void on_release(cuda_feeder_pointer self, const cuda_feeder_options& opts, std::uint64_t slot) {
  auto& st = self->state;
  if (!st.device) {
    return;
  }
  if (auto ok = st.device->release(slot); !ok) {
    log("feeder")->error("{}", ok.error().what());
    return;
  }
  auto samples = static_cast<std::uint64_t>(st.batches[slot]->size());
  self->send(opts.feeder.batcher, atoms::credit::value, opts.feeder.gpu, std::uint64_t{1}, samples);
}

std::string figures(const cuda_feeder_state& st, const cuda_feeder_options& opts) {
  return "device=" + std::to_string(opts.device) +
         " ready=" + std::to_string(opts.feeder.channel->size()) +
         " free_slots=" + std::to_string(st.device ? st.device->free_slots() : 0);
}

feeder_actor::behavior_type cuda_feeder(cuda_feeder_pointer self, cuda_feeder_options opts) {
  auto& st = self->state;
  st.metrics = std::make_unique<actor_metrics>("feeder-" + std::to_string(opts.feeder.gpu));
  // Made here, on the actor's own thread, where its CUDA calls will run.
  if (auto device = cuda::device_feeder::create(device_options(opts)); device) {
    st.device.emplace(std::move(*device));
    for (std::uint64_t i = 0; i < opts.feeder.slots; ++i) {
      st.batches.push_back(std::make_shared<host_batch>());
    }
    self->send(opts.feeder.batcher, atoms::credit::value, opts.feeder.gpu, opts.feeder.slots,
               std::uint64_t{0});
  } else {
    fail(opts, error{device.error().code(), "feeder " + std::to_string(opts.feeder.gpu) + ": " +
                                                device.error().message()});
  }
  start_reporting(self, opts.feeder.report);
  return {
      [self, opts](atoms::batch, const batch_plan& plan) { on_plan(self, opts, plan); },
      [self, opts](atoms::release, std::uint64_t slot) { on_release(self, opts, slot); },
      [self, opts](atoms::tick) {
        report_and_rearm(self, opts.feeder.report, *self->state.metrics,
                         figures(self->state, opts));
      },
  };
}

}  // namespace

feeder_actor spawn_cuda_feeder(caf::actor_system& sys, cuda_feeder_options options) {
  return sys.spawn<caf::detached>(cuda_feeder, std::move(options));
}

}  // namespace conveyor

#include "apps/conveyor-node/simulated_trainer.hpp"

#include "apps/conveyor-node/process_io.hpp"

#include <algorithm>

namespace conveyor {

using clock_type = std::chrono::steady_clock;

training_record::training_record(std::uint64_t dataset_size, std::uint64_t epochs)
    : epochs_(epochs),
      ledger_(dataset_size),
      epoch_stall_(epochs),
      epoch_end_(epochs),
      disk_at_start_(storage_read_bytes()),
      disk_at_end_(epochs, 0) {}

void training_record::add_batch(const batch& b, std::chrono::nanoseconds waited) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto id : b.sample_ids()) {
    ledger_.deliver(b.epoch(), id);
  }
  samples_ += b.size();
  batches_ += b.size() > 0 ? 1 : 0;
  stall_ += waited;
  if (b.epoch() < epoch_stall_.size()) {
    epoch_stall_[b.epoch()] += waited;
  }
}

void training_record::add_step(std::chrono::nanoseconds stepped) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ += stepped;
}

void training_record::end_epoch(std::uint64_t epoch, clock_type::time_point when) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch < epoch_end_.size()) {
    epoch_end_[epoch] = std::max(epoch_end_[epoch], when);
    disk_at_end_[epoch] = std::max(disk_at_end_[epoch], storage_read_bytes());
  }
}

training_record::totals training_record::summarize(clock_type::time_point start) const {
  std::lock_guard<std::mutex> lock(mutex_);
  totals t;
  t.samples = samples_;
  t.batches = batches_;
  t.stall_s = std::chrono::duration<double>(stall_).count();
  t.step_s = std::chrono::duration<double>(step_).count();
  for (std::uint64_t e = 0; e < epochs_; ++e) {
    t.ledger += ledger_.summary(e);
    if (epoch_end_[e] != clock_type::time_point{}) {  // an interrupted run ends fewer
      t.epoch_end_s.push_back(std::chrono::duration<double>(epoch_end_[e] - start).count());
    }
    t.epoch_stall_s.push_back(std::chrono::duration<double>(epoch_stall_[e]).count());
  }
  auto before = disk_at_start_;
  for (std::uint64_t e = 0; e < epochs_ && disk_at_end_[e] != 0; ++e) {
    t.epoch_disk_mb.push_back(static_cast<double>(disk_at_end_[e] - before) / 1e6);
    before = disk_at_end_[e];
  }
  return t;
}

void run_simulated_trainer(pipeline& p, int gpu, std::chrono::nanoseconds step,
                           training_record& record, delivery_audit* audit,
                           const std::function<void()>& on_batch, stop_token& stop) {
  while (!stop.requested()) {
    auto asked = clock_type::now();
    auto b = p.next(gpu);
    if (!b) {
      return;  // after the last epoch, or the pipeline stopped
    }
    auto got = clock_type::now();
    record.add_batch(*b, got - asked);
    if (audit != nullptr) {
      audit->record(*b);
    }
    if (b->size() > 0 && step.count() > 0) {
      // The GPU works; this thread uses no CPU meanwhile.
      if (stop.wait_for(step)) {
        return;
      }
      record.add_step(clock_type::now() - got);
    }
    if (b->last_in_epoch()) {
      record.end_epoch(b->epoch(), clock_type::now());
    }
    b->release();
    if (on_batch) {
      on_batch();
    }
  }
}

}  // namespace conveyor

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "core/batching/batch_policy.hpp"
#include "core/batching/bucket_queue.hpp"

namespace conveyor {
namespace {

class latency_aware_policy final : public batch_policy {
 public:
  explicit latency_aware_policy(batch_shape shape)
      : batch_size_(std::max<std::uint64_t>(shape.batch_size, 1)),
        gpus_(shape.gpus),
        balanced_(shape.balanced),
        buckets_(std::move(shape.buckets)),
        learner_(buckets_.learned > 1 && buckets_.boundaries.empty()
                     ? std::make_shared<bucket_learner>(buckets_.learned)
                     : nullptr),
        cursors_(static_cast<std::size_t>(shape.gpus), shape.first_epoch) {}

  std::string_view name() const noexcept override { return "latency_aware"; }

  void begin_epoch(std::uint64_t epoch, std::uint64_t samples) override {
    auto& e = epochs_.emplace(epoch, epoch_state{buckets_, learner_}).first->second;
    e.outstanding = samples;
    e.taken.assign(static_cast<std::size_t>(gpus_), 0);
    const auto batches = (samples + batch_size_ - 1) / batch_size_;
    const auto gpus = static_cast<std::uint64_t>(gpus_);
    for (std::uint64_t g = 0; g < gpus; ++g) {
      e.quota.push_back(balanced_ ? batches / gpus + (g < batches % gpus ? 1 : 0) : batches);
    }
  }

  void add(prepared_ptr sample) override {
    epochs_.at(sample->ticket.epoch).ready.push(std::move(sample));
  }

  // Which sample does not matter here: only how many are still to come.
  void drop(std::uint64_t epoch, std::uint64_t /*seq*/) override {
    --epochs_.at(epoch).outstanding;
  }

  void set_window_full(bool full) override { window_full_ = full; }

  std::optional<batch_plan> take(int gpu) override {
    auto epoch = cursors_[static_cast<std::size_t>(gpu)];
    auto it = epochs_.find(epoch);
    if (it == epochs_.end()) {
      return std::nullopt;  // the GPU's next epoch has not begun
    }
    auto& e = it->second;
    if (e.final_taken) {  // another GPU took the final batch: this one only learns the end
      return finish_epoch(gpu, batch_plan{epoch, e.formed, gpu, {}, true});
    }
    if (!can_form(e)) {
      return std::nullopt;
    }
    auto& taken = e.taken[static_cast<std::size_t>(gpu)];
    const auto quota = e.quota[static_cast<std::size_t>(gpu)];
    if (taken >= quota && e.outstanding > 0) {
      return std::nullopt;  // this GPU has its share; the end comes with the final batch
    }
    auto plan = form_batch(e, epoch, gpu);
    ++taken;
    if (e.outstanding == 0) {  // that was the epoch's final batch
      e.final_taken = true;
      plan.last_in_epoch = true;
      return finish_epoch(gpu, std::move(plan));
    }
    if (balanced_ && taken == quota) {  // this GPU's share of the epoch is complete
      plan.last_in_epoch = true;
      return finish_epoch(gpu, std::move(plan));
    }
    return plan;
  }

 private:
  struct epoch_state {
    epoch_state(const bucketing& buckets, std::shared_ptr<bucket_learner> learner)
        : ready(buckets, std::move(learner)) {}
    std::uint64_t outstanding = 0;  ///< samples neither taken nor dropped (ready ones included)
    bucket_queue ready;             ///< by bucket, in completion order
    std::uint64_t formed = 0;       ///< batches formed so far: the next batch's index
    bool final_taken = false;
    int finished_gpus = 0;  ///< GPUs that got their last_in_epoch plan
    /// Per GPU: batches taken, and its share of the epoch's batches. Each GPU gets the same
    /// number of batches (one more for the first epoch_batches % gpus), whoever asks first:
    /// data-parallel ranks step together, so a rank with more batches would wait forever.
    std::vector<std::uint64_t> taken;
    std::vector<std::uint64_t> quota;
  };

  // A full batch of one bucket, or the whole rest of the epoch, is ready; or the window is
  // full and a full batch of mixed buckets is (nothing more can come until one goes out).
  bool can_form(const epoch_state& e) const noexcept {
    const auto ready = e.ready.size();
    return ready >= e.outstanding || e.ready.has_full(batch_size_) ||
           (window_full_ && ready >= batch_size_);
  }

  // The next batch of up to batch_size ready samples, oldest completion first (by bucket). An
  // empty batch (nothing left but dropped samples) only marks the end and takes no index.
  batch_plan form_batch(epoch_state& e, std::uint64_t epoch, int gpu) {
    batch_plan plan{epoch, e.formed, gpu, e.ready.take(batch_size_), false};
    const auto count = static_cast<std::uint64_t>(plan.samples.size());
    e.outstanding -= count;
    e.formed += count > 0 ? 1 : 0;
    return plan;
  }

  // Moves `gpu` on to the next epoch and forgets an epoch every GPU is done with.
  batch_plan finish_epoch(int gpu, batch_plan plan) {
    auto& epoch = cursors_[static_cast<std::size_t>(gpu)];
    auto it = epochs_.find(epoch);
    if (++it->second.finished_gpus == gpus_) {
      epochs_.erase(it);
    }
    ++epoch;
    return plan;
  }

  std::uint64_t batch_size_;
  int gpus_;
  bool balanced_;
  bucketing buckets_;
  std::shared_ptr<bucket_learner> learner_;  ///< learned boundaries, shared by every epoch
  bool window_full_ = false;
  std::map<std::uint64_t, epoch_state> epochs_;
  std::vector<std::uint64_t> cursors_;  ///< per GPU: the epoch it takes from
};

}  // namespace

std::unique_ptr<batch_policy> make_latency_aware_policy(batch_shape shape) {
  return std::make_unique<latency_aware_policy>(shape);
}

}  // namespace conveyor

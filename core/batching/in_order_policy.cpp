#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/batching/batch_policy.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor {
namespace {

class in_order_policy final : public batch_policy {
 public:
  explicit in_order_policy(batch_shape shape)
      : shape_(shape), cursors_(static_cast<std::size_t>(shape.gpus)) {
    for (int g = 0; g < shape_.gpus; ++g) {
      cursors_[static_cast<std::size_t>(g)] = {shape.first_epoch, static_cast<std::uint64_t>(g)};
    }
  }

  std::string_view name() const noexcept override { return "in_order"; }

  void begin_epoch(std::uint64_t epoch, std::uint64_t samples) override {
    auto& e = epochs_[epoch];
    e.samples = samples;
    e.arrived.assign(batches_in_epoch(samples, shape_.batch_size), 0);
  }

  void add(prepared_ptr sample) override {
    auto& e = epochs_.at(sample->ticket.epoch);
    ++e.arrived[sample->ticket.seq / shape_.batch_size];
    e.ready.emplace(sample->ticket.seq, std::move(sample));
  }

  void drop(std::uint64_t epoch, std::uint64_t seq) override {
    ++epochs_.at(epoch).arrived[seq / shape_.batch_size];
  }

  std::optional<batch_plan> take(int gpu) override {
    auto& c = cursors_[static_cast<std::size_t>(gpu)];
    auto it = epochs_.find(c.epoch);
    if (it == epochs_.end()) {
      return std::nullopt;  // the GPU's next epoch has not begun
    }
    auto& e = it->second;
    auto batches = e.arrived.size();
    if (c.batch >= batches) {  // this GPU has no batch at all in this epoch
      return finish_epoch(gpu, batch_plan{c.epoch, c.batch, gpu, {}, true});
    }
    if (e.arrived[c.batch] < batch_length(e, c.batch)) {
      return std::nullopt;  // head-of-line: wait for the slowest sample of this batch
    }
    auto plan = collect(e, c.epoch, c.batch, gpu);
    c.batch += static_cast<std::uint64_t>(shape_.gpus);
    if (c.batch >= batches) {
      plan.last_in_epoch = true;
      return finish_epoch(gpu, std::move(plan));
    }
    return plan;
  }

 private:
  struct epoch_state {
    std::uint64_t samples = 0;
    std::vector<std::uint32_t> arrived;  ///< per batch: samples ready or dropped
    std::unordered_map<std::uint64_t, prepared_ptr> ready;
    int finished_gpus = 0;
  };
  struct cursor {
    std::uint64_t epoch = 0;
    std::uint64_t batch = 0;
  };

  std::uint64_t batch_length(const epoch_state& e, std::uint64_t b) const {
    return std::min(shape_.batch_size, e.samples - b * shape_.batch_size);
  }

  batch_plan collect(epoch_state& e, std::uint64_t epoch, std::uint64_t b, int gpu) {
    batch_plan plan{epoch, b, gpu, {}, false};
    auto first = b * shape_.batch_size;
    for (auto seq = first; seq < first + batch_length(e, b); ++seq) {
      if (auto s = e.ready.find(seq); s != e.ready.end()) {  // absent: dropped
        plan.samples.push_back(std::move(s->second));
        e.ready.erase(s);
      }
    }
    return plan;
  }

  // Moves `gpu` on to the next epoch and forgets an epoch every GPU is done with.
  batch_plan finish_epoch(int gpu, batch_plan plan) {
    auto& c = cursors_[static_cast<std::size_t>(gpu)];
    auto it = epochs_.find(c.epoch);
    if (++it->second.finished_gpus == shape_.gpus) {
      epochs_.erase(it);
    }
    ++c.epoch;
    c.batch = static_cast<std::uint64_t>(gpu);
    return plan;
  }

  batch_shape shape_;
  std::map<std::uint64_t, epoch_state> epochs_;
  std::vector<cursor> cursors_;
};

}  // namespace

std::unique_ptr<batch_policy> make_in_order_policy(batch_shape shape) {
  return std::make_unique<in_order_policy>(shape);
}

}  // namespace conveyor

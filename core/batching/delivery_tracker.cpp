#include "core/batching/delivery_tracker.hpp"

#include <algorithm>

#include "core/batching/epoch_order.hpp"

namespace conveyor {

delivery_tracker::delivery_tracker(resume_state start, int gpus, std::uint64_t keep_ended)
    : run_(std::move(start)),
      keep_ended_(keep_ended),
      ended_(static_cast<std::size_t>(gpus), run_.first_epoch) {
  for (std::size_t i = 0; i < run_.begun.size(); ++i) {
    epochs_[run_.first_epoch + i].delivered = std::move(run_.begun[i]);
  }
  run_.begun.clear();
}

delivery_tracker::epoch_record& delivery_tracker::epoch_at(std::uint64_t epoch) {
  auto& e = epochs_[epoch];
  if (e.delivered.size() != run_.dataset_size) {  // first seen now
    e.delivered = delivered_set(run_.dataset_size);
  }
  if (e.position_of.empty() && run_.dataset_size > 0) {
    auto order = epoch_order(run_.dataset_size, run_.seed, epoch, run_.shuffle);
    e.position_of.resize(order.size());
    for (std::uint64_t p = 0; p < order.size(); ++p) {
      e.position_of[order[p]] = p;
    }
  }
  return e;
}

void delivery_tracker::record(int gpu, std::uint64_t epoch,
                              const std::vector<std::uint64_t>& sample_ids, bool last_in_epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sample_ids.empty()) {
    auto& e = epoch_at(epoch);
    for (auto id : sample_ids) {
      e.delivered.add(e.position_of[id]);
    }
  }
  if (last_in_epoch) {
    auto& ended = ended_[static_cast<std::size_t>(gpu)];
    ended = std::max(ended, epoch + 1);
    forget_ended();
  }
}

// Epochs every GPU has ended need no record any more (but the last keep_ended_ of them).
void delivery_tracker::forget_ended() {
  epochs_.erase(epochs_.begin(), epochs_.lower_bound(first_epoch_locked()));
}

// The first epoch recorded: the first one some GPU has not ended, less keep_ended_.
std::uint64_t delivery_tracker::first_epoch_locked() const {
  auto ended = ended_.empty() ? run_.first_epoch : *std::min_element(ended_.begin(), ended_.end());
  return std::max(run_.first_epoch, ended - std::min(ended, keep_ended_));
}

std::uint64_t delivery_tracker::first_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_epoch_locked();
}

resume_state delivery_tracker::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  resume_state s = run_;
  s.first_epoch = first_epoch_locked();
  auto last =
      epochs_.empty() ? s.first_epoch : std::max(s.first_epoch, epochs_.rbegin()->first + 1);
  for (auto e = s.first_epoch; e < last; ++e) {
    auto it = epochs_.find(e);
    s.begun.push_back(it != epochs_.end() ? it->second.delivered
                                          : delivered_set(run_.dataset_size));
  }
  return s;
}

}  // namespace conveyor

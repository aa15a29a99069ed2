#include "core/batching/delivery_tracker.hpp"

#include <algorithm>

#include "core/batching/epoch_order.hpp"

namespace conveyor {
namespace {

constexpr std::uint64_t word_bits = 64;

bool has(const std::vector<std::uint64_t>& bits, std::uint64_t i) {
  return ((bits[i / word_bits] >> (i % word_bits)) & 1U) != 0;
}

}  // namespace

delivery_tracker::delivery_tracker(resume_state start, int gpus, std::uint64_t keep_ended)
    : run_(std::move(start)),
      keep_ended_(keep_ended),
      ended_(static_cast<std::size_t>(gpus), run_.first_epoch) {
  for (std::size_t i = 0; i < run_.begun.size(); ++i) {
    const auto epoch = run_.first_epoch + i;
    const auto& order = order_of(epoch);
    auto& e = epoch_at(epoch);
    for (std::uint64_t p = 0; p < order.size(); ++p) {
      if (run_.begun[i].contains(p)) {
        e.ids[order[p] / word_bits] |= std::uint64_t{1} << (order[p] % word_bits);
      }
    }
  }
  run_.begun.clear();
}

delivery_tracker::epoch_record& delivery_tracker::epoch_at(std::uint64_t epoch) {
  auto& e = epochs_[epoch];
  if (e.ids.empty()) {
    e.ids.assign((run_.dataset_size + word_bits - 1) / word_bits, 0);
  }
  return e;
}

const std::vector<std::uint64_t>& delivery_tracker::order_of(std::uint64_t epoch) const {
  auto& order = orders_[epoch];
  if (order.empty()) {
    order = epoch_order(run_.dataset_size, run_.seed, epoch, run_.order);
  }
  return order;
}

void delivery_tracker::record(int gpu, std::uint64_t epoch,
                              const std::vector<std::uint64_t>& sample_ids, bool last_in_epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sample_ids.empty()) {
    auto& bits = epoch_at(epoch).ids;
    for (auto id : sample_ids) {
      if (id < run_.dataset_size) {  // a client's ids come from shared memory: never trusted
        bits[id / word_bits] |= std::uint64_t{1} << (id % word_bits);
      }
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
  const auto first = first_epoch_locked();
  epochs_.erase(epochs_.begin(), epochs_.lower_bound(first));
  orders_.erase(orders_.begin(), orders_.lower_bound(first));
}

// The first epoch recorded: the first one some GPU has not ended, less keep_ended_.
std::uint64_t delivery_tracker::first_epoch_locked() const {
  auto ended = ended_.empty() ? run_.first_epoch : *std::min_element(ended_.begin(), ended_.end());
  return std::max(run_.first_epoch, ended - std::min(ended, keep_ended_));
}

// The positions of `epoch`'s order whose samples were delivered.
delivered_set delivery_tracker::positions_of(std::uint64_t epoch) const {
  delivered_set out(run_.dataset_size);
  auto it = epochs_.find(epoch);
  if (it == epochs_.end()) {
    return out;
  }
  const auto& order = order_of(epoch);
  for (std::uint64_t p = 0; p < order.size(); ++p) {
    if (has(it->second.ids, order[p])) {
      out.add(p);
    }
  }
  return out;
}

resume_state delivery_tracker::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  resume_state s = run_;
  s.first_epoch = first_epoch_locked();
  auto last =
      epochs_.empty() ? s.first_epoch : std::max(s.first_epoch, epochs_.rbegin()->first + 1);
  for (auto e = s.first_epoch; e < last; ++e) {
    s.begun.push_back(positions_of(e));
  }
  return s;
}

}  // namespace conveyor

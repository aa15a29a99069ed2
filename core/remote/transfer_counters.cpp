#include "core/remote/transfer_counters.hpp"

#include <algorithm>

namespace conveyor {

transfer_counters::transfer_counters() : born_(std::chrono::steady_clock::now()) {}

void transfer_counters::attempt(s3_failure f, std::uint64_t bytes_in,
                                std::uint64_t bytes_out) noexcept {
  requests_.fetch_add(1, std::memory_order_relaxed);
  bytes_in_.fetch_add(bytes_in, std::memory_order_relaxed);
  bytes_out_.fetch_add(bytes_out, std::memory_order_relaxed);
  if (f != s3_failure::none) {
    by_failure_[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
  }
}

void transfer_counters::served(std::optional<std::uint64_t> epoch, std::uint64_t bytes,
                               std::chrono::steady_clock::time_point began,
                               std::chrono::steady_clock::time_point ended) {
  if (!epoch) {
    return;
  }
  auto seconds = [&](auto t) { return std::chrono::duration<double>(t - born_).count(); };
  std::lock_guard<std::mutex> lock(mutex_);
  if (epochs_.size() <= *epoch) {
    epochs_.resize(*epoch + 1);
  }
  auto& e = epochs_[*epoch];
  e.first_start_s = e.requests == 0 ? seconds(began) : std::min(e.first_start_s, seconds(began));
  e.last_end_s = std::max(e.last_end_s, seconds(ended));
  e.requests += 1;
  e.bytes += bytes;
}

transfer_counters::totals transfer_counters::snapshot() const {
  totals t;
  t.requests = requests_.load(std::memory_order_relaxed);
  t.retries = retries_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < t.by_failure.size(); ++i) {
    t.by_failure[i] = by_failure_[i].load(std::memory_order_relaxed);
  }
  t.bytes_in = bytes_in_.load(std::memory_order_relaxed);
  t.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  return t;
}

std::vector<transfer_counters::epoch_figures> transfer_counters::by_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epochs_;
}

}  // namespace conveyor

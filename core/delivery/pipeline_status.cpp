#include "core/delivery/pipeline_status.hpp"

namespace conveyor {

void pipeline_status::publish(pipeline_figures figures) {
  std::lock_guard<std::mutex> lock(mutex_);
  figures_ = std::move(figures);
}

void pipeline_status::publish_progress(pipeline_figures figures) {
  std::lock_guard<std::mutex> lock(mutex_);
  figures.quarantined = std::move(figures_.quarantined);
  figures_ = std::move(figures);
}

void pipeline_status::fail(error reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_) {
      failure_ = std::move(reason);
    }
  }
  close_channels();
}

void pipeline_status::close_channels() {
  stopping_.store(true, std::memory_order_release);
  for (const auto& c : channels_) {
    c->close();
  }
}

pipeline_figures pipeline_status::figures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return figures_;
}

std::optional<error> pipeline_status::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void pipeline_status::note_bottleneck(analysis::bottleneck b, double seconds,
                                      std::uint64_t samples) {
  std::lock_guard<std::mutex> lock(mutex_);
  bottlenecks_.add(b, seconds, samples);
}

analysis::bottleneck_tally pipeline_status::bottlenecks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bottlenecks_;
}

void pipeline_status::note_diagnosis(const analysis::interval_figures& f, std::string line) {
  std::lock_guard<std::mutex> lock(mutex_);
  interval_ = f;
  diagnosis_ = std::move(line);
}

std::string pipeline_status::diagnosis() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return diagnosis_;
}

std::optional<analysis::interval_figures> pipeline_status::last_interval() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return interval_;
}

void pipeline_status::note_tuning(const analysis::tuning& counts, std::uint64_t changes) {
  std::lock_guard<std::mutex> lock(mutex_);
  tuning_.emplace(counts, changes);
}

std::optional<std::pair<analysis::tuning, std::uint64_t>> pipeline_status::tuning() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tuning_;
}

void pipeline_status::note_window(window_time t) {
  std::lock_guard<std::mutex> lock(window_mutex_);
  window_ = t;
}

window_time pipeline_status::window() const {
  std::lock_guard<std::mutex> lock(window_mutex_);
  return window_;
}

}  // namespace conveyor

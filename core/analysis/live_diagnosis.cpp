#include "core/analysis/live_diagnosis.hpp"

#include <algorithm>

namespace conveyor::analysis {

bottleneck classify(const interval_figures& f) {
  const double wait_share = f.trainer_wait_s / (f.trainers * f.seconds);
  if (wait_share <= wait_threshold) {
    return bottleneck::trainer;
  }
  const double prep = f.prep_busy_s / (f.prep_workers * f.seconds);
  const double read = f.read_busy_s / (f.readers * f.seconds);
  if (f.window_fill >= full_window && prep <= idle_workers && read <= idle_workers) {
    return bottleneck::window;
  }
  return read > prep ? bottleneck::fetch : bottleneck::prep;
}

void bottleneck_tally::add(bottleneck b, double seconds, std::uint64_t samples) {
  seconds_[static_cast<std::size_t>(b)] += seconds;
  total_ += seconds;
  trainer_samples_ += b == bottleneck::trainer ? samples : 0;
}

std::optional<double> bottleneck_tally::trainer_rate() const {
  const double seconds = seconds_[static_cast<std::size_t>(bottleneck::trainer)];
  if (seconds <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(trainer_samples_) / seconds;
}

std::array<double, 4> bottleneck_tally::shares() const {
  std::array<double, 4> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = total_ > 0 ? seconds_[i] / total_ : 0.0;
  }
  return out;
}

bottleneck bottleneck_tally::dominant() const {
  auto most = std::max_element(seconds_.begin(), seconds_.end());
  return total_ > 0 ? all_bottlenecks[static_cast<std::size_t>(most - seconds_.begin())]
                    : bottleneck::trainer;
}

}  // namespace conveyor::analysis

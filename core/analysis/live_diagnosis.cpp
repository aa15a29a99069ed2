#include "core/analysis/live_diagnosis.hpp"

#include <algorithm>
#include <numeric>

namespace conveyor::analysis {

bottleneck classify(const interval_figures& f) {
  if (f.wait_share() <= wait_threshold) {
    return bottleneck::trainer;
  }
  const double prep = f.prep_share();
  const double read = f.read_share();
  if (prep < saturated && read < saturated &&
      f.window_full_share() >= idle_explained * (1 - prep)) {
    return bottleneck::window;
  }
  return read > prep ? bottleneck::fetch : bottleneck::prep;
}

void bottleneck_tally::add(bottleneck b, double seconds, std::uint64_t samples) {
  seconds_[static_cast<std::size_t>(b)] += seconds;
  trainer_samples_ += b == bottleneck::trainer ? samples : 0;
}

double bottleneck_tally::total_s() const noexcept {
  return std::accumulate(seconds_.begin(), seconds_.end(), 0.0);
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
  const double total = total_s();
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = total > 0 ? seconds_[i] / total : 0.0;
  }
  return out;
}

bottleneck bottleneck_tally::dominant() const {
  auto most = std::max_element(seconds_.begin(), seconds_.end());
  return total_s() > 0 ? all_bottlenecks[static_cast<std::size_t>(most - seconds_.begin())]
                       : bottleneck::trainer;
}

}  // namespace conveyor::analysis

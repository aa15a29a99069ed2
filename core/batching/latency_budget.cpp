#include "core/batching/latency_budget.hpp"

#include <algorithm>
#include <cmath>

namespace conveyor {
namespace {

// A double as int64, rounded and clamped to [0, no_hand_off].
std::int64_t to_ns(double value) noexcept {
  if (!(value > 0.0)) {
    return 0;  // also NaN
  }
  // 2^63 is the first double past int64's range.
  if (value >= 9223372036854775808.0) {
    return latency_budget::no_hand_off;
  }
  return std::llround(value);
}

}  // namespace

void latency_budget::fit_sums::add(const sized_latency& p, double sign) noexcept {
  n += sign;
  x += sign * p.pixels;
  y += sign * p.latency_ns;
  xx += sign * p.pixels * p.pixels;
  xy += sign * p.pixels * p.latency_ns;
}

latency_budget::latency_budget(latency_budget_settings settings)
    : settings_(settings), latencies_(settings.window) {
  settings_.window = latencies_.window();
  settings_.warm_up = std::max<std::size_t>(settings_.warm_up, 1);
  settings_.recompute_every = std::max<std::size_t>(settings_.recompute_every, 1);
  sized_.reserve(settings_.window);
}

void latency_budget::record(std::int64_t latency_ns, std::int64_t pixels) {
  latencies_.record(latency_ns);
  if (pixels > 0) {
    record_sized(latency_ns, pixels);
  }
  auto total = latencies_.total_recorded();
  if (total >= settings_.warm_up && (total - settings_.warm_up) % settings_.recompute_every == 0) {
    recompute();
  }
}

void latency_budget::record_sized(std::int64_t latency_ns, std::int64_t pixels) {
  sized_latency p{static_cast<double>(pixels), static_cast<double>(latency_ns)};
  ++sized_records_;
  if (sized_.size() < settings_.window) {
    sized_.push_back(p);
    sums_.add(p, 1.0);
    return;
  }
  sums_.add(sized_[sized_head_], -1.0);
  sized_[sized_head_] = p;
  sums_.add(p, 1.0);
  if (++sized_head_ == sized_.size()) {
    sized_head_ = 0;
    rebuild_sums();  // once per window: adding and subtracting must not drift for ever
  }
}

void latency_budget::rebuild_sums() {
  sums_ = {};
  for (const auto& p : sized_) {
    sums_.add(p, 1.0);
  }
}

void latency_budget::recompute() {
  budget_ns_ = std::max(settings_.min_budget_ns, latencies_.percentile(settings_.percentile));
  refit();
  straggler_pixels_ = sized_records_ < settings_.warm_up ? no_hand_off : threshold_pixels();
}

// Least squares over the window; see the header for the fallbacks.
void latency_budget::refit() {
  const auto& s = sums_;
  if (s.n < 1.0) {
    intercept_ns_ = ns_per_pixel_ = 0.0;
    return;
  }
  double mean_x = s.x / s.n;
  double mean_y = s.y / s.n;
  double var_x = s.xx / s.n - mean_x * mean_x;
  double cov_xy = s.xy / s.n - mean_x * mean_y;
  if (!(var_x > 1e-9 * mean_x * mean_x)) {  // one pixel count only: cost per pixel
    intercept_ns_ = 0.0;
    ns_per_pixel_ = mean_x > 0.0 ? mean_y / mean_x : 0.0;
    return;
  }
  ns_per_pixel_ = std::max(0.0, cov_xy / var_x);
  intercept_ns_ = mean_y - ns_per_pixel_ * mean_x;
}

std::int64_t latency_budget::predicted_ns(std::int64_t pixels) const noexcept {
  return to_ns(intercept_ns_ +
               ns_per_pixel_ * static_cast<double>(std::max<std::int64_t>(pixels, 0)));
}

// The largest pixel count whose prediction stays within the budget.
std::int64_t latency_budget::threshold_pixels() const noexcept {
  double headroom = static_cast<double>(budget_ns_) - intercept_ns_;
  if (headroom < 0.0) {
    return 0;  // the fixed cost alone is over the budget: every image is a straggler
  }
  if (ns_per_pixel_ <= 0.0) {
    return no_hand_off;
  }
  return to_ns(std::floor(headroom / ns_per_pixel_));
}

}  // namespace conveyor

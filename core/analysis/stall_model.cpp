#include "core/analysis/stall_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace conveyor::analysis {

std::string_view to_string(bottleneck b) noexcept {
  switch (b) {
    case bottleneck::trainer:
      return "trainer";
    case bottleneck::prep:
      return "prep";
    case bottleneck::fetch:
      return "fetch";
    case bottleneck::window:
      return "window";
  }
  return "?";
}

std::string_view bound_name(bottleneck b) noexcept {
  switch (b) {
    case bottleneck::trainer:
      return "trainer-bound";
    case bottleneck::prep:
      return "prep-bound";
    case bottleneck::fetch:
      return "fetch-bound";
    case bottleneck::window:
      return "window-bound";
  }
  return "?";
}

prediction predict(const rates& r, std::uint64_t epoch_samples) {
  prediction p;
  p.samples_per_s = r.ingestion;
  p.limit = bottleneck::trainer;
  if (r.prep < p.samples_per_s) {
    p.samples_per_s = r.prep;
    p.limit = bottleneck::prep;
  }
  if (r.fetch < p.samples_per_s) {
    p.samples_per_s = r.fetch;
    p.limit = bottleneck::fetch;
  }
  p.epoch_s = static_cast<double>(epoch_samples) / p.samples_per_s;
  if (std::isfinite(r.ingestion)) {
    p.stall_fraction = 1.0 - p.samples_per_s / r.ingestion;
  }
  return p;
}

double ingestion_rate(int gpus, std::uint64_t batch_size, double step_ms) {
  if (step_ms <= 0) {
    return std::numeric_limits<double>::infinity();
  }
  return static_cast<double>(gpus) * static_cast<double>(batch_size) * 1000.0 / step_ms;
}

double fetch_with_cache(double cached, double memory, double storage) {
  cached = std::clamp(cached, 0.0, 1.0);
  return 1.0 / (cached / memory + (1.0 - cached) / storage);
}

std::optional<double> cache_fraction_for(double target, double memory, double storage) {
  if (target <= storage) {
    return 0.0;
  }
  if (target > memory) {
    return std::nullopt;
  }
  // 1 / target = x / memory + (1 - x) / storage, solved for x.
  return (1.0 / storage - 1.0 / target) / (1.0 / storage - 1.0 / memory);
}

prep_scaling::prep_scaling(std::vector<double> measured) : measured_(std::move(measured)) {}

double prep_scaling::rate(int workers) const {
  const int measured = static_cast<int>(measured_.size());
  if (workers <= measured) {
    return measured_[static_cast<std::size_t>(std::max(workers, 1) - 1)];
  }
  return per_worker() * workers;
}

std::optional<int> prep_scaling::workers_for(double target) const {
  if (!std::isfinite(target)) {
    return std::nullopt;
  }
  for (int w = 1; w <= static_cast<int>(measured_.size()); ++w) {
    if (rate(w) >= target) {
      return w;
    }
  }
  return static_cast<int>(std::ceil(target / per_worker()));
}

}  // namespace conveyor::analysis

#include "core/audio/nonsilent_region.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace conveyor {
namespace {

/// DALI's moving mean square of float input: the sum of squares over the window in float32,
/// recomputed from scratch at each reset, updated in between by the difference of the
/// entering and leaving squares (rounded to float32 before it is added).
std::vector<float> moving_mean_square(const float* x, std::size_t n, std::size_t window,
                                      std::size_t reset_interval) {
  std::vector<float> out(n - window + 1);
  const float mean_factor = 1.0F / static_cast<float>(window);
  const std::size_t reset = reset_interval == 0 ? n : reset_interval;
  auto square = [x](std::size_t i) { return x[i] * x[i]; };
  for (std::size_t begin = 0; begin + window <= n;) {
    const std::size_t interval_end = std::min(begin + reset, n) - window + 1;
    float sum = 0.0F;
    for (std::size_t i = begin; i < begin + window; ++i) {
      sum += square(i);
    }
    out[begin] = sum * mean_factor;
    for (std::size_t i = begin + 1; i < interval_end; ++i) {
      const float change = square(i + window - 1) - square(i - 1);
      sum += change;
      out[i] = sum * mean_factor;
    }
    begin = interval_end;
  }
  return out;
}

}  // namespace

sample_range nonsilent_region(const float* x, std::size_t n, const nonsilence_options& options) {
  if (n == 0) {
    return {};
  }
  const std::size_t window = std::min(options.window, n);
  const auto mms = moving_mean_square(x, n, window, options.reset_interval);
  const float reference = *std::max_element(mms.begin(), mms.end());
  const float ratio = std::pow(10.0F, static_cast<float>(options.cutoff_db) * 0.1F);
  const float threshold = reference * ratio;
  auto loud = [threshold](float v) { return v >= threshold; };
  const auto first = std::find_if(mms.begin(), mms.end(), loud);
  if (first == mms.end()) {
    return {};  // NaN samples: nothing compares as loud
  }
  const auto last = std::find_if(mms.rbegin(), mms.rend(), loud);
  const auto begin = static_cast<std::size_t>(first - mms.begin());
  const auto end = static_cast<std::size_t>(mms.rend() - last) - 1;
  return {begin, end - begin + window};
}

}  // namespace conveyor

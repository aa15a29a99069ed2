#include "core/audio/nonsilent_region.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace conveyor {
namespace {

/// DALI's moving mean square of float input: the sum of squares over the window in float32,
/// recomputed from scratch at each reset, updated in between by the difference of the
/// entering and leaving squares (rounded to float32 before it is added). Each reset interval
/// is a chain of float additions of its own: four run side by side (each in DALI's order, so
/// the same sums), where one after the other every addition would wait on the one before.
std::vector<float> moving_mean_square(const float* x, std::size_t n, std::size_t window,
                                      std::size_t reset_interval) {
  std::vector<float> out(n - window + 1);
  const float mean_factor = 1.0F / static_cast<float>(window);
  const std::size_t reset = reset_interval == 0 ? n : reset_interval;
  auto square = [x](std::size_t i) { return x[i] * x[i]; };
  std::vector<std::size_t> starts;  // each interval's first output; the last entry ends them
  for (std::size_t begin = 0; begin + window <= n;
       begin = std::min(begin + reset, n) - window + 1) {
    starts.push_back(begin);
  }
  starts.push_back(out.size());
  // Intervals four at a time while four of one length remain (all but the last are alike).
  constexpr std::size_t lanes = 4;
  const std::size_t intervals = starts.size() - 1;
  std::size_t first = 0;
  auto length_of = [&](std::size_t k) { return starts[k + 1] - starts[k]; };
  for (; first + lanes <= intervals && length_of(first + lanes - 1) == length_of(first);
       first += lanes) {
    // Four named sums (an array's would live in memory, each addition a store and a load).
    float s0 = 0.0F;
    float s1 = 0.0F;
    float s2 = 0.0F;
    float s3 = 0.0F;
    const std::size_t length = length_of(first);
    const std::size_t b0 = starts[first];
    const std::size_t b1 = starts[first + 1];
    const std::size_t b2 = starts[first + 2];
    const std::size_t b3 = starts[first + 3];
    for (std::size_t k = 0; k < window; ++k) {
      s0 += square(b0 + k);
      s1 += square(b1 + k);
      s2 += square(b2 + k);
      s3 += square(b3 + k);
    }
    auto step = [&](float& sum, std::size_t i) {
      const float change = square(i + window - 1) - square(i - 1);
      sum += change;
      out[i] = sum * mean_factor;
    };
    out[b0] = s0 * mean_factor;
    out[b1] = s1 * mean_factor;
    out[b2] = s2 * mean_factor;
    out[b3] = s3 * mean_factor;
    for (std::size_t m = 1; m < length; ++m) {
      step(s0, b0 + m);
      step(s1, b1 + m);
      step(s2, b2 + m);
      step(s3, b3 + m);
    }
  }
  for (; first < intervals; ++first) {
    float sum = 0.0F;
    const std::size_t begin = starts[first];
    for (std::size_t k = 0; k < window; ++k) {
      sum += square(begin + k);
    }
    out[begin] = sum * mean_factor;
    for (std::size_t i = begin + 1; i < starts[first + 1]; ++i) {
      const float change = square(i + window - 1) - square(i - 1);
      sum += change;
      out[i] = sum * mean_factor;
    }
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

#include "core/transforms/decode_share.hpp"

#include <algorithm>

namespace conveyor {
namespace {

constexpr std::size_t slot(decode_share::decoder d) noexcept {
  return d == decode_share::decoder::gpu ? 1 : 0;
}

decode_share::decoder other(decode_share::decoder d) noexcept {
  return d == decode_share::decoder::gpu ? decode_share::decoder::cpu : decode_share::decoder::gpu;
}

}  // namespace

decode_share::decode_share(options o) : options_(o) {
  options_.first_tries = std::max(options_.first_tries, 1);
  options_.explore_every = std::max(options_.explore_every, 2);
  options_.weight = std::clamp(options_.weight, 0.001, 1.0);
  options_.give_up_after = std::max(options_.give_up_after, 1);
}

int decode_share::group_of(std::int64_t pixels) noexcept {
  int g = 0;
  while (pixels > 1 && g < groups - 1) {
    pixels >>= 1;
    ++g;
  }
  return g;
}

decode_share::decoder decode_share::choose(std::int64_t pixels) {
  std::lock_guard lock(mutex_);
  if (totals_.gpu_given_up) {
    return decoder::cpu;
  }
  auto& g = groups_[static_cast<std::size_t>(group_of(pixels))];
  ++g.chosen;
  return pick(g);
}

decode_share::decoder decode_share::pick(group& g) const {
  // The GPU is tried first: a group's first images show whether it is worth its wait.
  for (auto d : {decoder::gpu, decoder::cpu}) {
    if (g.measured[slot(d)] < options_.first_tries) {
      return d;
    }
  }
  auto faster =
      g.mean_ns[slot(decoder::gpu)] < g.mean_ns[slot(decoder::cpu)] ? decoder::gpu : decoder::cpu;
  return g.chosen % options_.explore_every == 0 ? other(faster) : faster;
}

void decode_share::measure(group& g, decoder d, double ns) const {
  auto s = slot(d);
  // The first measurements are averaged plainly, later ones weighted towards the recent.
  double w = g.measured[s] < options_.first_tries ? 1.0 / (g.measured[s] + 1) : options_.weight;
  g.mean_ns[s] += w * (ns - g.mean_ns[s]);
  g.measured[s] = std::min(g.measured[s] + 1, options_.first_tries);
}

void decode_share::record(decoder d, std::int64_t pixels, std::int64_t ns) {
  std::lock_guard lock(mutex_);
  auto& g = groups_[static_cast<std::size_t>(group_of(pixels))];
  measure(g, d, static_cast<double>(std::max<std::int64_t>(ns, 0)));
  (d == decoder::gpu ? totals_.gpu_images : totals_.cpu_images) += 1;
  if (d == decoder::gpu) {
    failures_in_a_row_ = 0;
  }
}

bool decode_share::gpu_missed(std::int64_t pixels, bool failed) {
  constexpr double unmeasured_cpu_penalty_ns = 1e8;
  std::lock_guard lock(mutex_);
  auto& g = groups_[static_cast<std::size_t>(group_of(pixels))];
  const bool cpu_known = g.measured[slot(decoder::cpu)] > 0;
  measure(g, decoder::gpu,
          cpu_known ? 2.0 * g.mean_ns[slot(decoder::cpu)] : unmeasured_cpu_penalty_ns);
  ++(failed ? totals_.gpu_failed : totals_.gpu_declined);
  if (!failed || totals_.gpu_given_up) {
    return false;
  }
  if (++failures_in_a_row_ < options_.give_up_after) {
    return false;
  }
  totals_.gpu_given_up = true;
  return true;
}

void decode_share::gpu_busy() {
  std::lock_guard lock(mutex_);
  ++totals_.gpu_busy;
}

decode_share::figures decode_share::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

}  // namespace conveyor

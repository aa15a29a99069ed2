#pragma once
/// Seeds for per-sample randomness. A step's random draws depend only on (epoch seed, sample
/// id, step index), never on the thread that runs it or on pauses between steps: that makes a
/// sample handed mid-chain to another actor come out exactly as if it had never moved.

#include <cstdint>

namespace conveyor {

/// splitmix64's output function: a bijective mix whose every output bit depends on every
/// input bit. Pure; callable from anywhere.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27U)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31U);
}

/// The seed of sample `sample_id` in the epoch seeded `epoch_seed`.
constexpr std::uint64_t sample_seed(std::uint64_t epoch_seed, std::uint64_t sample_id) noexcept {
  return splitmix64(splitmix64(epoch_seed) ^ sample_id);
}

/// The seed of step `step_index` of that sample; each mix is chained so that nearby ids and
/// indices give unrelated seeds.
constexpr std::uint64_t step_seed(std::uint64_t epoch_seed, std::uint64_t sample_id,
                                  std::uint64_t step_index) noexcept {
  return splitmix64(sample_seed(epoch_seed, sample_id) ^ step_index);
}

}  // namespace conveyor

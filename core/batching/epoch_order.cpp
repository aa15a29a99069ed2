#include "core/batching/epoch_order.hpp"

#include <numeric>
#include <random>
#include <utility>

#include "core/base/sample_seed.hpp"

namespace conveyor {

std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept {
  return splitmix64(splitmix64(seed) ^ splitmix64(epoch + 0x5eed));
}

std::vector<std::uint64_t> epoch_order(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       bool shuffle) {
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  if (!shuffle) {
    return order;
  }
  // Our own Fisher-Yates over mt19937_64 (rather than std::shuffle, whose algorithm the
  // standard leaves open) keeps the order identical across standard libraries.
  std::mt19937_64 rng(epoch_seed(seed, epoch));
  for (std::uint64_t i = n; i > 1; --i) {
    auto j = rng() % i;
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace conveyor

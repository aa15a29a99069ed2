#include "core/batching/epoch_order.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include "core/base/sample_seed.hpp"

namespace conveyor {
namespace {

// Our own Fisher-Yates over mt19937_64 (rather than std::shuffle, whose algorithm the
// standard leaves open) keeps the order identical across standard libraries.
template <class It>
void fisher_yates(It first, It last, std::mt19937_64& rng) {
  for (auto i = static_cast<std::uint64_t>(last - first); i > 1; --i) {
    auto j = rng() % i;
    std::swap(first[static_cast<std::ptrdiff_t>(i - 1)], first[static_cast<std::ptrdiff_t>(j)]);
  }
}

std::vector<std::uint64_t> iota(std::uint64_t n) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), std::uint64_t{0});
  return v;
}

std::uint64_t blocks_of(std::uint64_t n, const sample_order& order) {
  return (n + order.block - 1) / order.block;
}

// The blocks in the epoch's order (drawn first from `rng`, so that block_spans agrees).
std::vector<std::uint64_t> block_sequence(std::uint64_t n, const sample_order& order,
                                          std::mt19937_64& rng) {
  auto blocks = iota(blocks_of(n, order));
  fisher_yates(blocks.begin(), blocks.end(), rng);
  return blocks;
}

std::vector<std::uint64_t> order_in_blocks(std::uint64_t n, const sample_order& order,
                                           std::mt19937_64& rng) {
  const auto blocks = block_sequence(n, order, rng);
  std::vector<std::uint64_t> out;
  out.reserve(n);
  for (std::size_t first = 0; first < blocks.size(); first += order.span) {
    const auto span_begins = out.size();
    const auto last = std::min<std::size_t>(blocks.size(), first + order.span);
    for (auto b = first; b < last; ++b) {
      const auto from = blocks[b] * order.block;
      for (auto id = from; id < std::min(n, from + order.block); ++id) {
        out.push_back(id);
      }
    }
    fisher_yates(out.begin() + static_cast<std::ptrdiff_t>(span_begins), out.end(), rng);
  }
  return out;
}

}  // namespace

const char* to_string(shuffle_mode mode) noexcept {
  switch (mode) {
    case shuffle_mode::none:
      return "none";
    case shuffle_mode::global:
      return "global";
    case shuffle_mode::blocks:
      return "blocks";
  }
  return "?";
}

bool is_sound(const sample_order& order) noexcept {
  switch (order.mode) {
    case shuffle_mode::none:
    case shuffle_mode::global:
      return order.block == 0 && order.span == 0;
    case shuffle_mode::blocks:
      return order.block >= 1 && order.span >= 1;
  }
  return false;
}

std::string describe(const sample_order& order) {
  if (order.mode != shuffle_mode::blocks) {
    return to_string(order.mode);
  }
  return "blocks of " + std::to_string(order.block) + " samples, " + std::to_string(order.span) +
         " a span";
}

std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept {
  return splitmix64(splitmix64(seed) ^ splitmix64(epoch + 0x5eed));
}

std::vector<std::uint64_t> epoch_order(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       const sample_order& order) {
  if (order.mode == shuffle_mode::none) {
    return iota(n);
  }
  std::mt19937_64 rng(epoch_seed(seed, epoch));
  if (order.mode == shuffle_mode::blocks) {
    return order_in_blocks(n, order, rng);
  }
  auto out = iota(n);
  fisher_yates(out.begin(), out.end(), rng);
  return out;
}

std::vector<std::uint64_t> block_spans(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                       const sample_order& order) {
  if (order.mode != shuffle_mode::blocks) {
    return {};
  }
  std::mt19937_64 rng(epoch_seed(seed, epoch));
  const auto blocks = block_sequence(n, order, rng);
  std::vector<std::uint64_t> span(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    span[blocks[i]] = i / order.span;
  }
  return span;
}

}  // namespace conveyor

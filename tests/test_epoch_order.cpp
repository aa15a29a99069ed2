// The sampler's orders (core/batching/epoch_order.hpp): each a permutation, a pure function of
// (size, seed, epoch, order); the global shuffle unchanged from the Fisher-Yates resume states
// of earlier releases name; blocks made of whole blocks, `span` of them shuffled together.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "core/batching/epoch_order.hpp"

namespace conveyor {
namespace {

void expect_permutation(std::vector<std::uint64_t> order, std::uint64_t n) {
  ASSERT_EQ(order.size(), n);
  std::sort(order.begin(), order.end());
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(order[i], i);
  }
}

TEST(EpochOrder, TheGlobalShuffleIsTheFisherYatesOfEarlierReleases) {
  const std::uint64_t n = 1000;
  std::vector<std::uint64_t> expected(n);
  std::iota(expected.begin(), expected.end(), std::uint64_t{0});
  std::mt19937_64 rng(epoch_seed(5, 3));
  for (auto i = n; i > 1; --i) {
    std::swap(expected[i - 1], expected[rng() % i]);
  }
  EXPECT_EQ(epoch_order(n, 5, 3), expected);
  EXPECT_EQ(epoch_order(n, 5, 3, sample_order::shuffled(true)), expected);
  EXPECT_EQ(epoch_order(4, 5, 3, sample_order::shuffled(false)),
            (std::vector<std::uint64_t>{0, 1, 2, 3}));
}

TEST(EpochOrder, BlocksArePermutationsAndPureFunctionsOfSeedAndEpoch) {
  for (std::uint64_t n : {1u, 7u, 100u, 1001u}) {
    for (auto order : {sample_order::in_blocks(1, 1), sample_order::in_blocks(16, 4),
                       sample_order::in_blocks(7, 1000), sample_order::in_blocks(2000, 3)}) {
      expect_permutation(epoch_order(n, 9, 2, order), n);
      EXPECT_EQ(epoch_order(n, 9, 2, order), epoch_order(n, 9, 2, order));
    }
  }
  const auto o = sample_order::in_blocks(16, 4);
  EXPECT_NE(epoch_order(1001, 9, 2, o), epoch_order(1001, 9, 3, o));
  EXPECT_NE(epoch_order(1001, 9, 2, o), epoch_order(1001, 10, 2, o));
  EXPECT_NE(epoch_order(1001, 9, 2, o), epoch_order(1001, 9, 2, sample_order::in_blocks(16, 5)));
}

// Each run of span x block positions holds exactly the samples of `span` whole blocks, those
// block_spans says are that span's, and they are not left in block order.
TEST(EpochOrder, EachSpanHoldsWholeBlocksAsBlockSpansSays) {
  const std::uint64_t n = 1001;
  const auto o = sample_order::in_blocks(16, 4);  // 63 blocks, the last of 9 samples
  for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
    const auto order = epoch_order(n, 1, epoch, o);
    const auto spans = block_spans(n, 1, epoch, o);
    ASSERT_EQ(spans.size(), 63u);
    std::vector<std::uint64_t> blocks_in_span(16, 0);
    for (auto s : spans) {
      ++blocks_in_span[s];
    }
    EXPECT_EQ(blocks_in_span.back(), 3u);  // 63 = 15 x 4 + 3
    std::uint64_t span = 0;
    for (std::uint64_t p = 0; p < n; ++p) {
      const auto s = spans[order[p] / o.block];
      ASSERT_GE(s, span) << "position " << p << ": spans come one after another";
      span = s;
    }
    EXPECT_FALSE(std::is_sorted(order.begin(), order.begin() + 64));
  }
  EXPECT_TRUE(block_spans(n, 1, 0, sample_order::shuffled(true)).empty());
}

TEST(EpochOrder, OnlySoundOrdersAreSound) {
  EXPECT_TRUE(is_sound(sample_order::shuffled(true)));
  EXPECT_TRUE(is_sound(sample_order::shuffled(false)));
  EXPECT_TRUE(is_sound(sample_order::in_blocks(1, 1)));
  EXPECT_FALSE(is_sound(sample_order::in_blocks(0, 1)));
  EXPECT_FALSE(is_sound(sample_order::in_blocks(1, 0)));
  EXPECT_FALSE(is_sound(sample_order{shuffle_mode::none, 4, 0}));
  EXPECT_FALSE(is_sound(sample_order{static_cast<shuffle_mode>(3), 0, 0}));
  EXPECT_EQ(describe(sample_order::in_blocks(92, 32)), "blocks of 92 samples, 32 a span");
}

}  // namespace
}  // namespace conveyor

// DS-Analyzer's model (core/analysis/stall_model.hpp) and the node's live classifier
// (core/analysis/live_diagnosis.hpp) as plain code on given rates and fabricated figures.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/analysis/live_diagnosis.hpp"
#include "core/analysis/stall_model.hpp"

namespace conveyor::analysis {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

TEST(StallModel, TheJobRunsAtTheSlowestRate) {
  auto trainer = predict({400, 800, 1200}, 10000);
  EXPECT_EQ(trainer.limit, bottleneck::trainer);
  EXPECT_DOUBLE_EQ(trainer.samples_per_s, 400);
  EXPECT_DOUBLE_EQ(trainer.epoch_s, 25);
  EXPECT_DOUBLE_EQ(*trainer.stall_fraction, 0);
  auto prep = predict({1000, 800, 1200}, 10000);
  EXPECT_EQ(prep.limit, bottleneck::prep);
  EXPECT_DOUBLE_EQ(prep.epoch_s, 12.5);
  EXPECT_NEAR(*prep.stall_fraction, 0.2, 1e-12);  // waits 12.5 - 10 s of 12.5
  auto fetch = predict({1000, 800, 500}, 10000);
  EXPECT_EQ(fetch.limit, bottleneck::fetch);
  EXPECT_NEAR(*fetch.stall_fraction, 0.5, 1e-12);
  auto tie = predict({800, 800, 800}, 10);  // the trainer first, then prep
  EXPECT_EQ(tie.limit, bottleneck::trainer);
  EXPECT_EQ(predict({900, 800, 800}, 10).limit, bottleneck::prep);
}

TEST(StallModel, ATrainerThatTakesNoTimeHasNoStallFraction) {
  EXPECT_TRUE(std::isinf(ingestion_rate(4, 64, 0)));
  EXPECT_DOUBLE_EQ(ingestion_rate(4, 64, 100), 2560);  // 4 x 64 every 0.1 s
  auto p = predict({inf, 800, 1200}, 8000);
  EXPECT_EQ(p.limit, bottleneck::prep);
  EXPECT_DOUBLE_EQ(p.epoch_s, 10);
  EXPECT_FALSE(p.stall_fraction);
}

TEST(StallModel, TheCacheWhatIfBlendsMemoryAndStorage) {
  EXPECT_DOUBLE_EQ(fetch_with_cache(0, 10000, 100), 100);
  EXPECT_DOUBLE_EQ(fetch_with_cache(1, 10000, 100), 10000);
  // Half from memory at 10000/s, half from storage at 100/s: 1 / (0.5/10000 + 0.5/100).
  EXPECT_NEAR(fetch_with_cache(0.5, 10000, 100), 198.0198, 1e-3);
  EXPECT_DOUBLE_EQ(fetch_with_cache(2, 10000, 100), 10000);  // clamped to [0, 1]
  EXPECT_DOUBLE_EQ(*cache_fraction_for(80, 10000, 100), 0.0);
  auto x = cache_fraction_for(400, 10000, 100);
  ASSERT_TRUE(x);
  EXPECT_NEAR(fetch_with_cache(*x, 10000, 100), 400, 1e-9);
  EXPECT_FALSE(cache_fraction_for(20000, 10000, 100));
}

TEST(StallModel, PrepScalesAsMeasuredThenExtrapolates) {
  prep_scaling s({300, 560});
  EXPECT_DOUBLE_EQ(s.rate(1), 300);
  EXPECT_DOUBLE_EQ(s.rate(2), 560);
  EXPECT_FALSE(s.extrapolated(2));
  EXPECT_TRUE(s.extrapolated(3));
  EXPECT_DOUBLE_EQ(s.rate(4), 1120);  // 280 a worker, as with 2
  EXPECT_EQ(s.workers_for(250), 1);
  EXPECT_EQ(s.workers_for(500), 2);
  EXPECT_EQ(s.workers_for(1000), 4);  // 1000 / 280 = 3.6
  EXPECT_FALSE(s.workers_for(inf));
}

interval_figures figures(double wait, double prep, double read, double full) {
  interval_figures f;
  f.seconds = 1;
  f.trainers = 2;
  f.trainer_wait_s = wait * 2;
  f.prep_workers = 4;
  f.prep_busy_s = prep * 4;
  f.readers = 1;
  f.read_busy_s = read;
  f.window_full_s = full;
  return f;
}

TEST(LiveDiagnosis, ClassifiesFabricatedIntervals) {
  EXPECT_EQ(classify(figures(0.01, 0.6, 0.1, 1.0)), bottleneck::trainer);
  EXPECT_EQ(classify(figures(0.05, 1.0, 0.1, 1.0)), bottleneck::trainer);  // the threshold
  EXPECT_EQ(classify(figures(0.4, 0.97, 0.2, 1.0)), bottleneck::prep);
  EXPECT_EQ(classify(figures(0.4, 0.3, 0.95, 0.5)), bottleneck::fetch);
  EXPECT_EQ(classify(figures(0.4, 0.2, 0.1, 1.0)), bottleneck::window);  // credits held
  EXPECT_EQ(classify(figures(0.4, 0.2, 0.1, 0.3)), bottleneck::prep);    // window seldom full
  // 16 modelled preprocessors 70% busy under in_order at batch 64, the window full 34% of the
  // time (bench/scaling_model.sh; the H100 machine's run logged "busy 69%"): the window holds
  // the pool back, not the pool's speed. The point sample of samples in flight called it
  // prep-bound.
  EXPECT_EQ(classify(figures(0.2, 0.70, 0.04, 0.34)), bottleneck::window);
  EXPECT_EQ(classify(figures(0.2, 0.70, 0.04, 0.05)), bottleneck::prep);
  EXPECT_EQ(classify(figures(0.2, 0.9, 0.1, 0.9)), bottleneck::prep);  // a saturated pool
}

TEST(LiveDiagnosis, TheTallyNamesTheClassWithMostTime) {
  bottleneck_tally t;
  EXPECT_EQ(t.dominant(), bottleneck::trainer);
  EXPECT_EQ(t.shares(), (std::array<double, 4>{0, 0, 0, 0}));
  EXPECT_FALSE(t.trainer_rate());
  t.add(bottleneck::prep, 3, 900);  // not the trainers' own rate: they waited
  t.add(bottleneck::trainer, 1, 250);
  t.add(bottleneck::prep, 1);
  t.add(bottleneck::fetch, 5);
  EXPECT_EQ(t.dominant(), bottleneck::fetch);
  EXPECT_EQ(t.shares(), (std::array<double, 4>{0.1, 0.4, 0.5, 0}));
  EXPECT_DOUBLE_EQ(t.total_s(), 10);
  EXPECT_DOUBLE_EQ(*t.trainer_rate(), 250);
}

}  // namespace
}  // namespace conveyor::analysis

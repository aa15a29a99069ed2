// The counts of [pipeline] that may be "auto" (api/resolve_topology.hpp): readers and
// per_worker_limit follow the preprocessors (one reader per 8; 2 samples each under 8
// preprocessors, 4 from 8), preprocessors follow the cores, and a number given is kept.
#include <gtest/gtest.h>

#include "api/resolve_autotune.hpp"
#include "api/resolve_topology.hpp"
#include "config/topology.hpp"

namespace conveyor {
namespace {

TEST(ResolveCounts, ReadersAreOnePerEightPreprocessorsAndEachHoldsTwoUnderEightFourFromEight) {
  struct row {
    int preprocessors, readers, per_worker_limit;
  };
  for (auto r : {row{0, 1, 2}, row{1, 1, 2}, row{2, 1, 2}, row{7, 1, 2}, row{8, 1, 4}, row{9, 2, 4},
                 row{16, 2, 4}, row{17, 3, 4}, row{64, 8, 4}}) {
    EXPECT_EQ(auto_readers(r.preprocessors), r.readers) << r.preprocessors;
    EXPECT_EQ(auto_per_worker_limit(r.preprocessors), r.per_worker_limit) << r.preprocessors;
  }
}

TEST(ResolveCounts, AutoFollowsThePreprocessorsAndNumbersAreKept) {
  pipeline_config p;  // every count "auto"
  auto here = resolve_counts(p);
  EXPECT_EQ(here.preprocessors, hardware_cores());
  EXPECT_EQ(here.readers, auto_readers(hardware_cores()));
  EXPECT_EQ(here.per_worker_limit, auto_per_worker_limit(hardware_cores()));
  EXPECT_EQ(here.stragglers, hardware_cores());

  p.preprocessors = 16;
  auto sixteen = resolve_counts(p);
  EXPECT_EQ(sixteen.preprocessors, 16);
  EXPECT_EQ(sixteen.readers, 2);
  EXPECT_EQ(sixteen.per_worker_limit, 4);

  p.readers = 3;
  p.per_worker_limit = 1;
  p.stragglers = 0;
  auto given = resolve_counts(p);
  EXPECT_EQ(given.readers, 3);
  EXPECT_EQ(given.per_worker_limit, 1);
  EXPECT_EQ(given.stragglers, 0);
}

// With autotune the pipeline spawns the most the autotuner may use; without, what it runs.
TEST(ResolveCounts, AutotuneSpawnsTwiceTheCoresAndTwiceTheirReaders) {
  pipeline_config p;
  EXPECT_EQ(spawned_counts(p).preprocessors, hardware_cores());
  p.autotune = true;
  auto most = spawned_counts(p);
  EXPECT_EQ(most.preprocessors, 2 * hardware_cores());
  EXPECT_EQ(most.stragglers, 2 * hardware_cores());
  EXPECT_EQ(most.readers, 2 * auto_readers(2 * hardware_cores()));
  p.preprocessors = 4 * hardware_cores();  // more than twice the cores: kept
  p.stragglers = 1;                        // given: the bound
  most = spawned_counts(p);
  EXPECT_EQ(most.preprocessors, 4 * hardware_cores());
  EXPECT_EQ(most.stragglers, 1);
}

pipeline_spec spec_of(int workers, int stragglers, std::uint64_t window) {
  // plan_autotune looks at the counts only.
  auto chain = transform_chain::build({decode_spec{}, to_uint8_spec{}});
  EXPECT_TRUE(chain) << chain.error().what();
  pipeline_spec spec{nullptr, *chain, nullptr, nullptr, {}, batching_policy::latency_aware};
  spec.settings.workers = workers;
  spec.settings.batch_size = 8;
  spec.settings.gpus = 2;
  spec.settings.per_worker_limit = 2;
  spec.settings.hand_off = true;
  spec.settings.window_samples = window;
  spec.stragglers = stragglers;
  spec.readers = 1;
  return spec;
}

TEST(ResolveAutotune, StartsAtTheCountsAndBoundsTheWindow) {
  topology t;
  t.source = "node.toml";
  auto spec = spec_of(2, 2, 0);
  ASSERT_TRUE(plan_autotune(t, spec));
  EXPECT_FALSE(spec.autotune) << "off by default";
  EXPECT_EQ(spec.settings.workers, 2);

  t.pipeline.autotune = true;
  ASSERT_TRUE(plan_autotune(t, spec));
  ASSERT_TRUE(spec.autotune);
  const auto& a = *spec.autotune;
  const std::uint64_t window = (2 + 1) * 8 * 2 + 2 * 2 * 2;  // default_window at 2 preprocessors
  EXPECT_EQ(a.start, (analysis::tuning{2, 2, 1, window}));
  EXPECT_EQ(a.most.preprocessors, 2 * hardware_cores());
  EXPECT_EQ(a.most.window, 4u * window);
  EXPECT_EQ(a.least, (analysis::tuning{1, 1, 1, 16}));
  EXPECT_EQ(a.settings.window_per_worker, 4u);
  EXPECT_EQ(spec.settings.workers, a.most.preprocessors) << "spawned: the most";
  EXPECT_EQ(spec.stragglers, a.most.stragglers);

  t.pipeline.max_window_samples = 10;
  auto small = spec_of(2, 2, 0);
  auto refused = plan_autotune(t, small);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("pipeline.max_window_samples = 10"), std::string::npos)
      << refused.error().message();
}

TEST(ResolveAutotune, NoStragglersWithoutHandOffs) {
  topology t;
  t.pipeline.autotune = true;
  auto spec = spec_of(2, 0, 64);
  ASSERT_TRUE(plan_autotune(t, spec));
  EXPECT_EQ(spec.autotune->most.stragglers, 0);
  EXPECT_EQ(spec.autotune->least.stragglers, 0);
  EXPECT_EQ(spec.autotune->start.window, 64u) << "a window given is where it starts";
}

}  // namespace
}  // namespace conveyor

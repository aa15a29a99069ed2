// Hand-off permits in the batcher's logic: a preprocessor may hand a sample off only with a
// permit, and permits plus unfinished hand-offs never exceed the limit (what the straggler
// actors can start soon, and a share of the window). No actors, no clocks.
#include <gtest/gtest.h>

#include "core/batching/batcher_core.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

// A latency-aware core with `workers` preprocessors and `stragglers` straggler actors up.
batcher_core make_core(int workers, int stragglers, std::uint64_t window, double share,
                       std::uint64_t backlog) {
  batcher_settings s;
  s.dataset_size = 64;
  s.order = sample_order::shuffled(false);
  s.batch_size = 4;
  s.workers = workers;
  s.stragglers = stragglers;
  s.per_worker_limit = 8;
  s.window_samples = window;
  s.hand_off = true;
  s.handoff_share = share;
  s.straggler_backlog = backlog;
  batcher_core core(s, make_batch_policy(batching_policy::latency_aware, {4, 1}));
  core.on_credit(0, 100);
  core.on_worker_up(worker_role::reader, 0);
  for (int w = 0; w < workers; ++w) {
    core.on_worker_up(worker_role::preprocessor, w);
  }
  for (int k = 0; k < stragglers; ++k) {
    core.on_worker_up(worker_role::straggler, k);
  }
  return core;
}

prepared_ptr prepared(const sample_ticket& t) {
  return testing::prepared_for(t);
}

TEST(HandoffPermits, TheLimitIsWhatStragglersCanStartSoonCappedByTheWindowShare) {
  EXPECT_EQ(make_core(4, 2, 64, 1.0, 1).handoff_limit(), 4u);    // 2 x (1 running + 1 waiting)
  EXPECT_EQ(make_core(4, 2, 64, 1.0, 0).handoff_limit(), 2u);    // only what starts at once
  EXPECT_EQ(make_core(4, 8, 64, 0.25, 3).handoff_limit(), 16u);  // the window's share
  EXPECT_EQ(make_core(4, 0, 64, 1.0, 1).handoff_limit(), 0u);    // no straggler is up
  auto off = make_core(4, 2, 64, 1.0, 1);
  off.on_worker_down(worker_role::straggler, 0, 0, "test");
  EXPECT_EQ(off.handoff_limit(), 2u);  // only the straggler actors that are up count
}

TEST(HandoffPermits, NeverMoreHandOffsAndPermitsOutThanTheLimit) {
  auto core = make_core(4, 1, 64, 1.0, 1);  // limit 2
  auto d = core.take_dispatches();
  ASSERT_GE(d.size(), 4u);
  auto first = core.take_permits();
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(core.take_permits().empty()) << "one permit per preprocessor at a time, in all 2";
  // Preprocessor first[0] hands a sample off: its permit is used up, the hand-off counts.
  sample_ticket of_it{};
  for (const auto& o : d) {
    if (o.worker == first[0]) {
      of_it = o.ticket;
    }
  }
  ASSERT_TRUE(core.on_handed_off(of_it));
  EXPECT_EQ(core.handed_out(), 1u);
  EXPECT_TRUE(core.take_permits().empty()) << "1 hand-off + 1 permit = the limit";
  ASSERT_EQ(core.route_handoff(of_it), 0);
  // The straggler finishes it: a permit can go out again.
  ASSERT_TRUE(core.on_prepared(prepared(of_it)));
  EXPECT_EQ(core.handed_out(), 0u);
  EXPECT_EQ(core.take_permits().size(), 1u);
}

TEST(HandoffPermits, ADeadPreprocessorsPermitAndADeadStragglersSamplesAreFreed) {
  auto core = make_core(2, 1, 64, 1.0, 1);  // limit 2
  auto d = core.take_dispatches();
  auto granted = core.take_permits();
  ASSERT_EQ(granted.size(), 2u);
  core.on_worker_down(worker_role::preprocessor, granted[1], 0, "crashed");
  core.on_worker_up(worker_role::preprocessor, granted[1]);
  EXPECT_EQ(core.take_permits(), std::vector<int>{granted[1]}) << "its permit died with it";
  // A hand-off whose straggler actor dies is issued again and no longer counts.
  sample_ticket t{};
  for (const auto& o : d) {
    if (o.worker == granted[0]) {
      t = o.ticket;
    }
  }
  ASSERT_TRUE(core.on_handed_off(t));
  ASSERT_EQ(core.route_handoff(t), 0);
  EXPECT_EQ(core.handed_out(), 1u);
  auto retries = core.retries();
  core.on_worker_down(worker_role::straggler, 0, 0, "crashed");
  EXPECT_EQ(core.handed_out(), 0u);
  EXPECT_EQ(core.retries(), retries + 1);
}

TEST(HandoffPermits, NoPermitsWithoutHandOffs) {
  batcher_settings s;
  s.dataset_size = 8;
  s.workers = 2;
  s.stragglers = 2;
  s.window_samples = 8;
  batcher_core core(s, make_batch_policy(batching_policy::in_order, {4, 1}));
  core.on_worker_up(worker_role::preprocessor, 0);
  core.on_worker_up(worker_role::straggler, 0);
  EXPECT_EQ(core.handoff_limit(), 0u);
  EXPECT_TRUE(core.take_permits().empty());
}

}  // namespace
}  // namespace conveyor

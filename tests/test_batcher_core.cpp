// The batcher's logic without actors: a seeded simulation completes samples in scrambled
// order, feeders grant credits and trainers release batches. No clocks, no threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/batching/batcher_core.hpp"
#include "core/batching/epoch_order.hpp"
#include "support/batcher_world.hpp"

namespace conveyor {
namespace {

using testing::world_params;
using testing::world_result;

// The batcher with the in_order policy, every sample completing in a seeded random order.
world_result run_world(world_params p, std::uint64_t seed) {
  p.straggler_every = 0;
  return testing::batcher_world(p, batching_policy::in_order, seed).run();
}

// What the trainers received, checked independently of the batcher's own ledger.
void expect_exactly_once(const world_params& p, const world_result& r) {
  epoch_ledger seen(p.samples);
  for (const auto& b : r.batches) {
    for (const auto& s : b.samples) {
      seen.deliver(b.epoch, s->ticket.sample_id);
    }
  }
  std::uint64_t failing = p.fail_every == 0 ? 0 : (p.samples + p.fail_every - 1) / p.fail_every;
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    auto sum = seen.summary(e);
    EXPECT_EQ(sum.duplicates, 0u) << "epoch " << e;
    EXPECT_EQ(sum.delivered, p.samples - failing) << "epoch " << e;
  }
  EXPECT_EQ(r.totals.lost, 0u);
  EXPECT_EQ(r.totals.duplicates, 0u);
  EXPECT_EQ(r.totals.quarantined, failing * p.epochs);
}

class BatcherCore : public ::testing::TestWithParam<int> {};

TEST_P(BatcherCore, EverySampleExactlyOncePerEpochWithinTheWindow) {
  world_params p;
  p.gpus = GetParam();
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto r = run_world(p, seed);
    expect_exactly_once(p, r);
    EXPECT_LE(r.peak_in_flight, r.window);
  }
}

TEST_P(BatcherCore, EverySampleIsToldAheadOnceInTheEpochsOrderBeforeItIsDispatched) {
  world_params p;
  p.gpus = GetParam();
  p.epochs = 3;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    auto r = run_world(p, seed);
    EXPECT_EQ(r.dispatched_untold, 0u);
    ASSERT_EQ(r.told.size(), p.epochs);
    for (std::uint64_t e = 0; e < p.epochs; ++e) {
      EXPECT_EQ(r.told[e], epoch_order(p.samples, seed, e)) << "epoch " << e;
    }
  }
}

// Blocks: the samples of a span are told all at once, a span ahead of the one being
// dispatched (its blocks are fetched whole, before the readers reach them); exactly once still,
// with a short last block too.
TEST_P(BatcherCore, InBlocksEachSpanIsToldWholeASpanAhead) {
  world_params p;
  p.gpus = GetParam();
  p.epochs = 3;
  p.window = 16;
  p.samples = 96;
  p.order = sample_order::in_blocks(8, 4);  // 3 spans of 32 samples
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    auto r = run_world(p, seed);
    expect_exactly_once(p, r);
    EXPECT_EQ(r.dispatched_untold, 0u);
    for (std::uint64_t e = 0; e < p.epochs; ++e) {
      EXPECT_EQ(r.told[e], epoch_order(p.samples, seed, e, p.order)) << "epoch " << e;
      const auto& through = r.told_through[e];
      ASSERT_FALSE(through.empty());
      EXPECT_EQ(through.front(), 64u) << "the first two spans at once";
      for (auto t : through) {
        EXPECT_EQ(t % 32, 0u) << t << " is not the end of a span";
      }
    }
  }
  p.samples = 103;
  expect_exactly_once(p, run_world(p, 7));
}

TEST_P(BatcherCore, QuarantinedSamplesAreCountedAndTheEpochGoesOn) {
  world_params p;
  p.gpus = GetParam();
  p.fail_every = 10;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    expect_exactly_once(p, run_world(p, seed));
  }
}

// The recipe's filter (an utterance over max_duration): counted as filtered in every epoch,
// never retried or quarantined, and once known not dispatched (read) again; the epochs go on
// with every other sample exactly once, under both policies.
TEST_P(BatcherCore, FilteredSamplesAreCountedEveryEpochAndNotReadAgain) {
  world_params p;
  p.gpus = GetParam();
  p.filter_every = 7;
  p.epochs = 4;
  p.window = 16;  // much less than an epoch: later epochs begin after the filter has spoken
  const std::uint64_t filtered = (p.samples + 5) / 7;  // ids 1, 8, 15, ... below 103
  for (auto kind : {batching_policy::in_order, batching_policy::latency_aware}) {
    for (std::uint64_t seed = 0; seed < 5; ++seed) {
      auto r = testing::batcher_world(p, kind, seed).run();
      EXPECT_EQ(r.totals.filtered, filtered * p.epochs);
      EXPECT_EQ(r.totals.quarantined, 0u);
      EXPECT_EQ(r.totals.lost, 0u);
      EXPECT_EQ(r.totals.duplicates, 0u);
      EXPECT_EQ(r.totals.delivered, (p.samples - filtered) * p.epochs);
      // A sample left out while later epochs' samples were already in flight may be read
      // once more; with a window of 16 that is at most the window's worth, never every epoch.
      EXPECT_LE(r.filtered_dispatched_again, p.window) << "seed " << seed;
    }
  }
}

TEST_P(BatcherCore, InOrderBatchesFollowTheSamplerOrderAndGoRoundRobin) {
  world_params p;
  p.gpus = GetParam();
  auto r = run_world(p, 7);
  std::vector<std::vector<std::uint64_t>> next_batch(p.epochs,
                                                     std::vector<std::uint64_t>(p.gpus, 0));
  for (const auto& b : r.batches) {
    if (b.samples.empty()) {
      continue;
    }
    EXPECT_EQ(b.gpu, gpu_of_batch(b.index, p.gpus));
    auto order = epoch_order(p.samples, 7, b.epoch);  // the world's seed is the sampler's
    for (std::size_t i = 0; i < b.samples.size(); ++i) {
      auto seq = b.index * p.batch + i;
      EXPECT_EQ(b.samples[i]->ticket.seq, seq);
      EXPECT_EQ(b.samples[i]->ticket.sample_id, order[seq]);
    }
    // Each GPU receives its batches in increasing order.
    auto& want = next_batch[b.epoch][static_cast<std::size_t>(b.gpu)];
    EXPECT_GE(b.index, want);
    want = b.index + 1;
  }
}

TEST_P(BatcherCore, EachGpuGetsOneEndOfEpochPerEpoch) {
  world_params p;
  p.gpus = GetParam();
  p.samples = 20;  // with 4 GPUs and batch 8, GPU 3 has no batch at all
  auto r = run_world(p, 3);
  std::map<std::pair<std::uint64_t, int>, int> ends;
  for (const auto& b : r.batches) {
    ends[{b.epoch, b.gpu}] += b.last_in_epoch ? 1 : 0;
  }
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    for (int g = 0; g < p.gpus; ++g) {
      EXPECT_EQ((ends[{e, g}]), 1) << "epoch " << e << " gpu " << g;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, BatcherCore, ::testing::Values(1, 2, 4));

// Batches of 2 over `dataset` samples, `workers` preprocessors holding 2 samples each.
batcher_settings pool_of(int workers, std::uint64_t dataset) {
  batcher_settings s;
  s.dataset_size = dataset;
  s.batch_size = 2;
  s.workers = workers;
  s.per_worker_limit = 2;
  return s;
}

// Every reader, preprocessor and straggler actor of `s` reports up to `core`.
void every_worker_up(batcher_core& core, const batcher_settings& s) {
  for (int r = 0; r < s.readers; ++r) {
    core.on_worker_up(worker_role::reader, r);
  }
  for (int w = 0; w < s.workers; ++w) {
    core.on_worker_up(worker_role::preprocessor, w);
  }
  for (int w = 0; w < s.stragglers; ++w) {
    core.on_worker_up(worker_role::straggler, w);
  }
}

// A pool larger than the batches ahead (batch 2 on 16 cores, as the UNet3D recipe runs): the
// default window still lets every preprocessor hold its per_worker_limit, and leaves room for
// later samples while the oldest batch waits for its slowest one (more under in_order, which
// holds them all until that batch is complete).
TEST(DefaultWindow, KeepsEveryPreprocessorOfALargePoolBusy) {
  auto s = pool_of(16, 1000);
  const std::uint64_t prefetch = 2;
  s.window_samples = default_window(prefetch, batching_policy::in_order, s);
  EXPECT_EQ(s.window_samples, (prefetch + 1) * 2 + 6 * 16 * 2);
  EXPECT_EQ(default_window(prefetch, batching_policy::latency_aware, s),
            (prefetch + 1) * 2 + 2 * 16 * 2);
  batcher_core core(s,
                    make_batch_policy(batching_policy::in_order, {s.batch_size, 1, false, 0, {}}));
  core.on_credit(0, prefetch + 1);
  every_worker_up(core, s);
  std::map<int, std::uint64_t> held;
  for (const auto& d : core.take_dispatches()) {
    ++held[d.worker];
  }
  ASSERT_EQ(held.size(), 16u) << "preprocessors given work";
  for (const auto& [worker, n] : held) {
    EXPECT_EQ(n, s.per_worker_limit) << "preprocessor " << worker;
  }
}

// The window's time full is counted over its spells, whatever happens in between, and a spell
// still going on is extrapolated by its reader up to the moment asked about.
TEST(WindowOccupancy, CountsTheTimeEveryCreditWasHeld) {
  window_occupancy w(4);
  w.update(3, 100);  // not full
  EXPECT_EQ(w.time().full_until(1000), 0u);
  w.update(4, 200);  // full from 200
  w.update(4, 250);  // still the same spell
  EXPECT_EQ(w.time().full_since_ns, 200u);
  EXPECT_EQ(w.time().full_until(260), 60u);
  w.update(2, 300);  // 100 ns full
  EXPECT_EQ(w.time().full_until(1000), 100u);
  w.update(5, 400);
  EXPECT_EQ(w.time().full_until(450), 150u);
  w.update(0, 500);
  EXPECT_EQ(w.time(), (window_time{200, 0}));
}

// The batcher's window fills when it dispatches as much as the window lets it: a spell begins.
TEST(WindowOccupancy, TheBatcherTellsWhenItsWindowFills) {
  auto s = pool_of(4, 100);
  s.window_samples = 6;
  batcher_core core(s,
                    make_batch_policy(batching_policy::in_order, {s.batch_size, 1, false, 0, {}}));
  EXPECT_EQ(core.window_full().full_since_ns, 0u);
  core.on_credit(0, 3);
  every_worker_up(core, s);
  EXPECT_EQ(core.take_dispatches().size(), 6u);
  EXPECT_NE(core.window_full().full_since_ns, 0u);
}

TEST(EpochOrder, IsAPermutationThatDependsOnSeedAndEpochOnly) {
  auto a = epoch_order(1000, 5, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(sorted[i], i);
  }
  EXPECT_EQ(a, epoch_order(1000, 5, 0));
  EXPECT_NE(a, epoch_order(1000, 5, 1));
  EXPECT_NE(a, epoch_order(1000, 6, 0));
  EXPECT_EQ(epoch_order(5, 5, 0, sample_order::shuffled(false)),
            (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
}

TEST(EpochLedger, FilteredSamplesAreAccountedForButNotQuarantined) {
  epoch_ledger ledger(4);
  ledger.deliver(0, 0);
  ledger.filter(0, 1);
  ledger.filter(0, 1);  // told twice: counted once
  ledger.quarantine({0, 2, "utt_2", "decode_error"});
  auto s = ledger.summary(0);
  EXPECT_EQ(s.filtered, 1u);
  EXPECT_EQ(s.quarantined, 1u);
  EXPECT_EQ(s.lost, 1u);  // sample 3
  EXPECT_EQ(ledger.quarantined().size(), 1u) << "the filter's samples are no faults";
  ledger.deliver(0, 3);
  EXPECT_TRUE(ledger.complete(0));
}

TEST(EpochLedger, CountsDuplicatesLostAndQuarantined) {
  epoch_ledger ledger(5);
  ledger.deliver(0, 0);
  ledger.deliver(0, 1);
  ledger.deliver(0, 1);
  ledger.quarantine({0, 2, "img_2", "decode_error"});
  auto s = ledger.summary(0);
  EXPECT_EQ(s.delivered, 2u);
  EXPECT_EQ(s.duplicates, 1u);
  EXPECT_EQ(s.quarantined, 1u);
  EXPECT_EQ(s.lost, 2u);
  EXPECT_FALSE(ledger.complete(0));
  ledger.deliver(0, 3);
  ledger.deliver(0, 4);
  EXPECT_TRUE(ledger.complete(0));
  ASSERT_EQ(ledger.quarantined().size(), 1u);
  EXPECT_EQ(ledger.quarantined()[0].key, "img_2");
  EXPECT_EQ(ledger.summary(1).lost, 5u) << "an epoch never seen lost everything";
}

// Autotune's counts: only the first N workers of a pool get work (the rest finish what they
// hold), and a window set smaller or larger bounds what is dispatched from then on.
TEST(BatcherCoreAutotune, OnlyActiveWorkersGetWorkWithinTheWindowSet) {
  auto s = pool_of(4, 100);
  s.readers = 2;
  s.window_samples = 100;
  batcher_core core(s,
                    make_batch_policy(batching_policy::in_order, {s.batch_size, 1, false, 0, {}}));
  core.on_credit(0, 3);
  every_worker_up(core, s);
  core.set_active(worker_role::preprocessor, 2);
  core.set_active(worker_role::reader, 1);
  EXPECT_EQ(core.active(worker_role::preprocessor), 2);
  auto first = core.take_dispatches();
  ASSERT_EQ(first.size(), 2 * s.per_worker_limit);
  for (const auto& d : first) {
    EXPECT_LT(d.worker, 2);
    EXPECT_EQ(d.reader, 0);
  }
  core.set_window(5);  // one more sample fits
  core.set_active(worker_role::preprocessor, 4);
  EXPECT_EQ(core.take_dispatches().size(), 1u);
  EXPECT_NE(core.window_full().full_since_ns, 0u);
  core.set_window(12);  // room again: the other preprocessors fill up to their limit
  EXPECT_EQ(core.take_dispatches().size(), 4 * s.per_worker_limit - 5);
  EXPECT_EQ(core.settings().window_samples, 12u);
  // Bounds: at least one of a pool, at most those spawned.
  core.set_active(worker_role::preprocessor, 0);
  EXPECT_EQ(core.active(worker_role::preprocessor), 1);
  core.set_active(worker_role::reader, 9);
  EXPECT_EQ(core.active(worker_role::reader), 2);
}

// Hand-offs go only to the active straggler actors, and permits only to active preprocessors.
TEST(BatcherCoreAutotune, HandOffsGoToActiveStragglersOnly) {
  auto s = pool_of(4, 100);
  s.window_samples = 40;
  s.hand_off = true;
  s.stragglers = 3;
  s.straggler_backlog = 4;
  batcher_core core(
      s, make_batch_policy(batching_policy::latency_aware, {s.batch_size, 1, false, 0, {}}));
  core.on_credit(0, 3);
  every_worker_up(core, s);
  core.set_active(worker_role::straggler, 1);
  core.set_active(worker_role::preprocessor, 2);
  EXPECT_EQ(core.handoff_limit(), 1u * (1 + s.straggler_backlog));
  for (int w : core.take_permits()) {
    EXPECT_LT(w, 2);
  }
  auto d = core.take_dispatches();
  ASSERT_GE(d.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(core.on_handed_off(d[i].ticket));
    EXPECT_EQ(core.route_handoff(d[i].ticket), 0);
  }
  core.set_active(worker_role::straggler, 0);
  EXPECT_EQ(core.handoff_limit(), 0u);
  EXPECT_TRUE(core.take_permits().empty());
}

}  // namespace
}  // namespace conveyor

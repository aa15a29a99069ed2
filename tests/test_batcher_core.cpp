// The batcher's logic without actors: a seeded simulation completes samples in scrambled
// order, feeders grant credits and trainers release batches. No clocks, no threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/batcher_core.hpp"
#include "core/epoch_order.hpp"

namespace conveyor {
namespace {

struct world_params {
  std::uint64_t samples = 103;
  std::uint64_t batch = 8;
  int gpus = 1;
  int workers = 3;
  std::uint64_t epochs = 2;
  std::uint64_t prefetch = 2;
  std::uint64_t fail_every = 0;  ///< every n-th sample id fails (0: none)
};

struct world_result {
  std::vector<batch_plan> batches;  ///< in the order the trainers received them
  std::uint64_t peak_in_flight = 0;
  std::uint64_t window = 0;
  epoch_summary totals;
};

// Runs the batcher to the end. In-flight samples complete in a random order; a trainer takes
// (and releases) a batch whenever the feeder holds one, also in a random order across GPUs.
world_result run_world(const world_params& p, std::uint64_t seed) {
  batcher_settings s;
  s.dataset_size = p.samples;
  s.seed = 42;
  s.epochs = p.epochs;
  s.batch_size = p.batch;
  s.gpus = p.gpus;
  s.workers = p.workers;
  s.window_samples = (p.prefetch + 1) * p.batch * static_cast<std::uint64_t>(p.gpus);
  batcher_core core(s, make_in_order_policy({p.batch, p.gpus}));
  for (int g = 0; g < p.gpus; ++g) {
    core.on_credit(g, p.prefetch + 1);
  }
  std::mt19937_64 rng(seed);
  std::vector<dispatch_order> pending;
  std::vector<batch_plan> at_feeders;
  world_result result;
  result.window = s.window_samples;
  while (!core.finished() || !at_feeders.empty()) {
    for (auto& d : core.take_dispatches()) {
      pending.push_back(d);
    }
    for (auto& b : core.take_batches()) {
      at_feeders.push_back(std::move(b));
    }
    result.peak_in_flight = std::max(result.peak_in_flight, core.in_flight());
    bool train = pending.empty() || (!at_feeders.empty() && rng() % 3 == 0);
    if (train) {
      if (at_feeders.empty()) {
        ADD_FAILURE() << "stuck: nothing pending and nothing to train on";
        break;
      }
      // A trainer consumes the oldest batch of a random GPU that has one.
      auto gpu = at_feeders[rng() % at_feeders.size()].gpu;
      auto it = std::find_if(at_feeders.begin(), at_feeders.end(),
                             [&](const batch_plan& b) { return b.gpu == gpu; });
      core.on_released(it->samples.size());
      core.on_credit(gpu, 1);
      result.batches.push_back(std::move(*it));
      at_feeders.erase(it);
      continue;
    }
    auto i = rng() % pending.size();
    auto d = pending[i];
    pending.erase(pending.begin() + static_cast<long>(i));
    if (p.fail_every != 0 && d.ticket.sample_id % p.fail_every == 0) {
      core.on_failed(d.ticket, d.worker, "img_" + std::to_string(d.ticket.sample_id), "broken");
      continue;
    }
    auto sample = std::make_shared<prepared_sample>();
    sample->ticket = d.ticket;
    core.on_prepared(std::move(sample), d.worker);
  }
  result.totals = core.ledger().totals();
  return result;
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

TEST_P(BatcherCore, QuarantinedSamplesAreCountedAndTheEpochGoesOn) {
  world_params p;
  p.gpus = GetParam();
  p.fail_every = 10;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    expect_exactly_once(p, run_world(p, seed));
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
    auto order = epoch_order(p.samples, 42, b.epoch);
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
  EXPECT_EQ(epoch_order(5, 5, 0, false), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
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

}  // namespace
}  // namespace conveyor

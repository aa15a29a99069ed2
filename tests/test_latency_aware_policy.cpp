// The latency-aware batching policy, driven directly and through batcher_core by seeded
// worlds that complete samples in scrambled order. No clocks, no threads, no sleeps.
#include <gtest/gtest.h>

#include "support/batcher_world.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/batching/batch_policy.hpp"
#include "core/batching/batcher_core.hpp"
#include "core/batching/epoch_ledger.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor {
namespace {

using testing::batcher_world;
using testing::world_params;
using testing::world_result;

prepared_ptr make_sample(std::uint64_t epoch, std::uint64_t seq) {
  auto s = std::make_shared<prepared_sample>();
  s->ticket = {epoch, seq, seq, epoch};  // sample_id = seq: the policy never looks at ids
  return s;
}

bool holds(const batch_plan& plan, std::uint64_t seq) {
  return std::any_of(plan.samples.begin(), plan.samples.end(),
                     [&](const prepared_ptr& s) { return s->ticket.seq == seq; });
}

class LatencyAwarePolicy : public ::testing::TestWithParam<int> {
 protected:
  int gpus() const { return GetParam(); }
};

// (a) Sample `slow` is withheld: a batch forms as soon as batch_size others are ready.
TEST_P(LatencyAwarePolicy, ASlowSampleNeverBlocksABatch) {
  constexpr std::uint64_t batch = 4;
  constexpr std::uint64_t samples = 3 * batch + 1;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    std::mt19937_64 rng(seed);
    auto policy = make_latency_aware_policy({batch, gpus()});
    policy->begin_epoch(0, samples);
    auto order = epoch_order(samples, seed, 0);
    auto slow = order[0];
    std::uint64_t ready = 0;
    for (auto seq : order) {
      if (seq == slow) {
        continue;
      }
      policy->add(make_sample(0, seq));
      ++ready;
      auto plan = policy->take(static_cast<int>(rng() % static_cast<std::uint64_t>(gpus())));
      ASSERT_EQ(plan.has_value(), ready == batch) << "seed " << seed << " ready " << ready;
      if (plan) {
        EXPECT_EQ(plan->samples.size(), batch);
        EXPECT_FALSE(holds(*plan, slow));
        EXPECT_FALSE(plan->last_in_epoch);
        ready = 0;
      }
    }
    policy->add(make_sample(0, slow));  // the straggler closes the epoch, alone
    auto last = policy->take(0);
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(last->samples.size(), 1u);
    EXPECT_TRUE(last->last_in_epoch);
    EXPECT_EQ(last->index, 3u);
  }
}

TEST_P(LatencyAwarePolicy, AStragglerJoinsALaterBatchOfItsOwnEpochOnly) {
  auto policy = make_latency_aware_policy({4, gpus()});
  policy->begin_epoch(0, 10);
  policy->begin_epoch(1, 10);
  for (std::uint64_t seq = 1; seq < 10; ++seq) {
    policy->add(make_sample(0, seq));
  }
  for (std::uint64_t seq = 0; seq < 10; ++seq) {
    policy->add(make_sample(1, seq));  // epoch 1 is all ready: still no GPU may start it
  }
  ASSERT_TRUE(policy->take(0).has_value());
  ASSERT_TRUE(policy->take(gpus() - 1).has_value());
  for (int g = 0; g < gpus(); ++g) {
    EXPECT_FALSE(policy->take(g).has_value()) << "gpu " << g;
  }
  policy->add(make_sample(0, 0));
  auto tail = policy->take(gpus() - 1);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->epoch, 0u);
  EXPECT_EQ(tail->samples.size(), 2u);  // seq 9 and the straggler, seq 0
  EXPECT_TRUE(holds(*tail, 0));
  EXPECT_TRUE(tail->last_in_epoch);
  auto next = policy->take(gpus() - 1);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->epoch, 1u);
  EXPECT_EQ(next->index, 0u);
}

// A seeded world driving the policy directly: every epoch begins up front, samples complete
// in a scrambled order that runs well into the next epoch, every n-th is dropped, and random
// GPUs ask for batches in between.
struct drive_params {
  std::uint64_t samples = 37;
  std::uint64_t batch = 4;
  int gpus = 1;
  std::uint64_t epochs = 3;
  std::uint64_t drop_every = 0;  ///< every n-th seq is dropped (0: none)
};

bool dropped(const drive_params& p, std::uint64_t seq) {
  return p.drop_every != 0 && seq % p.drop_every == 0;
}

// (epoch, seq) in completion order: each sample is late by up to 1.5 epochs' worth.
std::vector<std::pair<std::uint64_t, std::uint64_t>> completion_order(const drive_params& p,
                                                                      std::mt19937_64& rng) {
  std::vector<std::pair<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>> keyed;
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    for (std::uint64_t seq = 0; seq < p.samples; ++seq) {
      keyed.push_back({e * p.samples + seq + rng() % (p.samples * 3 / 2 + 1), {e, seq}});
    }
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& k : keyed) {
    out.push_back(k.second);
  }
  return out;
}

// Takes for `gpu` and keeps what comes.
void take_into(batch_policy& policy, int gpu, std::vector<batch_plan>& out) {
  if (auto plan = policy.take(gpu)) {
    out.push_back(std::move(*plan));
  }
}

// Every batch in the order the policy formed it.
std::vector<batch_plan> drive(const drive_params& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto policy = make_latency_aware_policy({p.batch, p.gpus});
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    policy->begin_epoch(e, p.samples);
  }
  auto gpus = static_cast<std::uint64_t>(p.gpus);
  std::vector<batch_plan> out;
  for (auto [epoch, seq] : completion_order(p, rng)) {
    while (rng() % 3 == 0) {
      take_into(*policy, static_cast<int>(rng() % gpus), out);
    }
    if (dropped(p, seq)) {
      policy->drop(epoch, seq);
    } else {
      policy->add(make_sample(epoch, seq));
    }
  }
  // Everything is in: the GPUs drain the rest, or the policy is stuck.
  auto ends = [&] {
    return std::count_if(out.begin(), out.end(),
                         [](const batch_plan& b) { return b.last_in_epoch; });
  };
  while (static_cast<std::uint64_t>(ends()) < p.epochs * gpus) {
    auto before = out.size();
    for (int g = 0; g < p.gpus; ++g) {
      take_into(*policy, g, out);
    }
    if (out.size() == before) {
      ADD_FAILURE() << "stuck with every sample in";
      break;
    }
  }
  for (int g = 0; g < p.gpus; ++g) {
    EXPECT_FALSE(policy->take(g).has_value()) << "gpu " << g << " after the last epoch";
  }
  return out;
}

// (b) Every sample exactly once per epoch, or dropped; checked with the epoch ledger.
void expect_exactly_once(const drive_params& p, const std::vector<batch_plan>& batches) {
  epoch_ledger ledger(p.samples);
  for (const auto& b : batches) {
    for (const auto& s : b.samples) {
      ledger.deliver(s->ticket.epoch, s->ticket.sample_id);
    }
  }
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    for (std::uint64_t seq = 0; seq < p.samples; ++seq) {
      if (dropped(p, seq)) {
        ledger.quarantine({e, seq, "seq_" + std::to_string(seq), "dropped"});
      }
    }
    auto sum = ledger.summary(e);
    EXPECT_EQ(sum.duplicates, 0u) << "epoch " << e;
    EXPECT_EQ(sum.lost, 0u) << "epoch " << e;
    EXPECT_TRUE(ledger.complete(e));
  }
}

// (c) No batch mixes epochs; each GPU's batches come in epoch order and nothing of an epoch
// reaches a GPU after its last_in_epoch; batches are numbered in the order they formed, and
// only an epoch's final batch may be partial.
void expect_epoch_order(const drive_params& p, const std::vector<batch_plan>& batches) {
  std::vector<std::uint64_t> gpu_epoch(static_cast<std::size_t>(p.gpus), 0);
  std::map<std::uint64_t, std::uint64_t> formed;
  for (const auto& b : batches) {
    for (const auto& s : b.samples) {
      EXPECT_EQ(s->ticket.epoch, b.epoch);
    }
    auto& current = gpu_epoch[static_cast<std::size_t>(b.gpu)];
    EXPECT_EQ(b.epoch, current) << "gpu " << b.gpu;
    current += b.last_in_epoch ? 1 : 0;
    if (!b.samples.empty()) {
      EXPECT_EQ(b.index, formed[b.epoch]++);
      EXPECT_TRUE(b.samples.size() == p.batch || b.last_in_epoch) << b.samples.size();
    }
    EXPECT_LE(b.samples.size(), p.batch);
  }
}

// (d) Every GPU gets exactly one last_in_epoch per epoch.
void expect_one_end_per_gpu_and_epoch(const drive_params& p,
                                      const std::vector<batch_plan>& batches) {
  std::map<std::pair<std::uint64_t, int>, int> ends;
  for (const auto& b : batches) {
    ends[{b.epoch, b.gpu}] += b.last_in_epoch ? 1 : 0;
  }
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    for (int g = 0; g < p.gpus; ++g) {
      EXPECT_EQ((ends[{e, g}]), 1) << "epoch " << e << " gpu " << g;
    }
  }
}

void expect_all(const drive_params& p, std::uint64_t seeds) {
  for (std::uint64_t seed = 0; seed < seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto batches = drive(p, seed);
    expect_exactly_once(p, batches);
    expect_epoch_order(p, batches);
    expect_one_end_per_gpu_and_epoch(p, batches);
  }
}

TEST_P(LatencyAwarePolicy, EverySampleExactlyOncePerEpochInEpochOrder) {
  drive_params p;
  p.gpus = gpus();
  expect_all(p, 20);
}

TEST_P(LatencyAwarePolicy, DroppedSamplesLeaveNoHoleAndNoStall) {
  drive_params p;
  p.gpus = gpus();
  p.drop_every = 5;
  expect_all(p, 20);
  p.drop_every = 1;  // every sample quarantined: each epoch is only its end markers
  expect_all(p, 3);
}

TEST_P(LatencyAwarePolicy, EachGpuGetsOneEndOfEpochEvenWhenTheDatasetIsSmall) {
  drive_params p;
  p.gpus = gpus();
  p.batch = 8;
  for (std::uint64_t samples : {0, 1, 5, 8, 9}) {  // fewer than gpus * batch_size
    p.samples = samples;
    SCOPED_TRACE("samples " + std::to_string(samples));
    expect_all(p, 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, LatencyAwarePolicy, ::testing::Values(1, 2, 4));

// Balanced: a GPU that asks all the time still gets only its share of each epoch (ranks of a
// data-parallel job must step together), and the batch that completes the share ends its
// epoch. 37 samples in batches of 4 are 10 batches: shares 3, 3, 2, 2 over 4 GPUs.
TEST(BalancedLatencyAwarePolicy, EachGpuGetsItsShareWhoeverAsksFirst) {
  auto policy = make_latency_aware_policy({4, 4, true});
  policy->begin_epoch(0, 37);
  std::map<int, std::vector<batch_plan>> got;
  std::set<std::uint64_t> seen;
  for (std::uint64_t seq = 0; seq < 37; ++seq) {
    policy->add(make_sample(0, seq));
    while (auto plan = policy->take(0)) {  // GPU 0 is greedy
      got[0].push_back(std::move(*plan));
    }
  }
  for (int g = 1; g < 4; ++g) {
    while (auto plan = policy->take(g)) {
      got[g].push_back(std::move(*plan));
    }
  }
  const std::vector<std::size_t> shares{3, 3, 2, 2};
  for (int g = 0; g < 4; ++g) {
    ASSERT_EQ(got[g].size(), shares[static_cast<std::size_t>(g)]) << "gpu " << g;
    EXPECT_TRUE(got[g].back().last_in_epoch) << "gpu " << g;
    for (const auto& plan : got[g]) {
      for (const auto& s : plan.samples) {
        EXPECT_TRUE(seen.insert(s->ticket.seq).second) << "seq " << s->ticket.seq << " twice";
      }
    }
  }
  EXPECT_EQ(seen.size(), 37u);
}

// Issue 50: while samples come slower than the trainers ask (the UNet3D recipe's first epoch,
// which indexes every case on its first read), a GPU whose credit comes back before the next
// batch forms used to take every batch until its share of the epoch was done; the others
// waited meanwhile, and it then waited for the next epoch while they trained on the rest of
// this one. The GPUs take turns instead: none is ever more than one batch of an epoch ahead
// of another. Samples complete one at a time, each batch is trained at once.
class ScarceSamples : public ::testing::TestWithParam<int> {};

TEST_P(ScarceSamples, TheGpusTakeTurnsAtEachEpochsBatches) {
  const int gpus = GetParam();
  batcher_settings s;
  s.batch_size = 2;
  s.gpus = gpus;
  s.dataset_size = 3 * s.batch_size * static_cast<std::uint64_t>(gpus);  // 3 batches per GPU
  s.epochs = 3;
  s.workers = 1;
  s.per_worker_limit = 1;  // one sample prepared at a time: batches form one by one
  s.window_samples = default_window(2, batching_policy::latency_aware, s);
  batcher_core core(
      s, make_batch_policy(batching_policy::latency_aware, {s.batch_size, gpus, true, 0, {}}));
  core.on_worker_up(worker_role::reader, 0);
  core.on_worker_up(worker_role::preprocessor, 0);
  for (int g = 0; g < gpus; ++g) {
    core.on_credit(g, 3);
  }
  std::vector<batch_plan> got;
  std::vector<dispatch_order> pending;
  while (!core.finished()) {
    for (auto& d : core.take_dispatches()) {
      pending.push_back(d);
    }
    ASSERT_FALSE(pending.empty()) << "stuck";
    auto sample = std::make_shared<prepared_sample>();
    sample->ticket = pending.front().ticket;
    pending.erase(pending.begin());
    ASSERT_TRUE(core.on_prepared(std::move(sample)));
    for (auto& b : core.take_batches()) {  // every trainer is faster than the samples come
      core.on_released(b.samples.size());
      core.on_credit(b.gpu, 1);
      got.push_back(std::move(b));
    }
  }
  epoch_ledger seen(s.dataset_size);
  std::map<std::uint64_t, std::vector<std::uint64_t>> taken;  // per epoch, batches per GPU
  for (const auto& b : got) {
    for (const auto& x : b.samples) {
      EXPECT_EQ(x->ticket.epoch, b.epoch);
      seen.deliver(b.epoch, x->ticket.sample_id);
    }
    if (b.samples.empty()) {
      continue;
    }
    auto& counts = taken[b.epoch];
    counts.resize(static_cast<std::size_t>(gpus), 0);
    ++counts[static_cast<std::size_t>(b.gpu)];
    auto [fewest, most] = std::minmax_element(counts.begin(), counts.end());
    EXPECT_LE(*most - *fewest, 1u)
        << "epoch " << b.epoch << " batch " << b.index << ": gpu " << b.gpu << " ran ahead";
  }
  EXPECT_EQ(seen.totals().delivered, s.dataset_size * s.epochs);
  EXPECT_EQ(seen.totals().duplicates, 0u);
  EXPECT_EQ(core.ledger().totals().lost, 0u);
}

INSTANTIATE_TEST_SUITE_P(Gpus, ScarceSamples, ::testing::Values(2, 4));

// (e) The batcher core with either policy, in tests/support/batcher_world.hpp.
void expect_nothing_lost(const world_params& p, const world_result& r) {
  std::uint64_t failing = p.fail_every == 0 ? 0 : (p.samples + p.fail_every - 1) / p.fail_every;
  EXPECT_EQ(r.totals.lost, 0u);
  EXPECT_EQ(r.totals.duplicates, 0u);
  EXPECT_EQ(r.totals.quarantined, failing * p.epochs);
  epoch_ledger seen(p.samples);
  for (const auto& b : r.batches) {
    for (const auto& s : b.samples) {
      EXPECT_EQ(s->ticket.epoch, b.epoch);
      seen.deliver(b.epoch, s->ticket.sample_id);
    }
  }
  EXPECT_EQ(seen.totals().duplicates, 0u);
  EXPECT_EQ(seen.totals().delivered, (p.samples - failing) * p.epochs);
}

class StragglerWorld : public ::testing::TestWithParam<int> {};

TEST_P(StragglerWorld, LatencyAwareFormsTheBatchesInOrderWouldHoldBack) {
  world_params p;
  p.gpus = GetParam();
  p.max_sample_retries = 0;  // failures quarantine at once: retries are another test's subject
  for (std::uint64_t fail_every : {0, 10}) {
    p.fail_every = fail_every;
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " fail_every " + std::to_string(fail_every));
      auto in_order = batcher_world(p, batching_policy::in_order, seed).run();
      auto aware = batcher_world(p, batching_policy::latency_aware, seed).run();
      expect_nothing_lost(p, in_order);
      expect_nothing_lost(p, aware);
      EXPECT_GT(aware.batches_past_stragglers, in_order.batches_past_stragglers);
      if (p.gpus == 1) {  // one lane: in_order never forms a batch past a missing sample
        EXPECT_EQ(in_order.batches_past_stragglers, 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, StragglerWorld, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace conveyor

// Bucketing by length (batching.bucket_by): the bucket queue, the latency-aware policy with
// buckets, and batcher_core worlds with buckets (exactly-once, equal batch counts, no stall
// with a window smaller than the buckets could fill). No clocks, no threads, no sleeps.
#include <gtest/gtest.h>

#include "support/batcher_world.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/batching/batch_policy.hpp"
#include "core/batching/bucket_learner.hpp"
#include "core/batching/bucket_queue.hpp"
#include "core/batching/bucketing.hpp"

namespace conveyor {
namespace {

using testing::batcher_world;
using testing::length_of;
using testing::world_params;
using testing::world_result;

bucketing by_length(std::vector<std::int64_t> boundaries) {
  return bucketing{0, 0, std::move(boundaries)};
}

prepared_ptr sample_of_length(std::uint64_t seq, std::int64_t length, std::uint64_t epoch = 0) {
  auto s = std::make_shared<prepared_sample>();
  s->ticket = {epoch, seq, seq, epoch};
  s->fields.push_back(host_array::zeros(dtype::uint8, {length}));
  return s;
}

std::vector<std::uint64_t> seqs(const std::vector<prepared_ptr>& samples) {
  std::vector<std::uint64_t> out;
  for (const auto& s : samples) {
    out.push_back(s->ticket.seq);
  }
  return out;
}

using seq_list = std::vector<std::uint64_t>;

TEST(Bucketing, BoundariesSplitLengthsIntoHalfOpenBuckets) {
  const auto b = by_length({100, 200});
  EXPECT_EQ(b.buckets(), 3u);
  const std::map<std::int64_t, std::size_t> expected{{0, 0},   {99, 0},  {100, 1},
                                                     {199, 1}, {200, 2}, {1000000, 2}};
  for (auto [length, bucket] : expected) {
    EXPECT_EQ(bucket_of_length(b.length_of(*sample_of_length(0, length)), b.boundaries), bucket)
        << "length " << length;
  }
  auto on_axis_1 = b;
  on_axis_1.axis = 1;
  auto s = std::make_shared<prepared_sample>();
  s->fields.push_back(host_array::zeros(dtype::float32, {2, 150}));
  EXPECT_EQ(on_axis_1.length_of(*s), 150);
  EXPECT_EQ(bucketing{}.length_of(*s), 0);  // no bucketing: every sample in bucket 0
}

TEST(BucketLearner, BoundariesAreTheQuantilesOfWhatItSaw) {
  bucket_learner learner(4);
  EXPECT_TRUE(learner.boundaries().empty());  // nothing seen: one bucket
  for (std::int64_t length = 1; length <= 15; ++length) {
    learner.observe(length);
  }
  EXPECT_TRUE(learner.boundaries().empty());  // not before 16
  learner.observe(16);
  // 16 lengths 1..16: 4 apiece, buckets from 5, 9 and 13.
  EXPECT_EQ(learner.boundaries(), (std::vector<std::int64_t>{5, 9, 13}));
  for (int i = 0; i < 16; ++i) {
    learner.observe(100);  // 32 samples, half of them 100: the upper quantiles collapse
  }
  EXPECT_EQ(learner.boundaries(), (std::vector<std::int64_t>{9, 100}));
}

TEST(BucketLearner, FollowsTheLengthsAsTheyCome) {
  bucket_learner learner(2);
  for (int i = 0; i < 1024; ++i) {
    learner.observe(10 + i % 10);  // 10..19: the median is 15
  }
  EXPECT_EQ(learner.boundaries(), (std::vector<std::int64_t>{15}));
  for (int i = 0; i < 3072; ++i) {
    learner.observe(1000 + i % 10);  // now three quarters are long: the median moves up
  }
  ASSERT_EQ(learner.boundaries().size(), 1u);
  EXPECT_GT(learner.boundaries()[0], 1000);
  EXPECT_EQ(learner.observed(), 4096u);
}

// Learned buckets in a queue: the sample's bucket is decided when the batch is formed, so a
// sample that waited from before the boundaries moved is placed by the boundaries now.
TEST(BucketQueue, LearnedBucketsPlaceEveryWaitingSampleByTheBoundariesNow) {
  auto learner = std::make_shared<bucket_learner>(2);
  bucketing learned{0, 0, {}, 2};
  bucket_queue q(learned, learner);
  for (std::uint64_t i = 0; i < 16; ++i) {
    q.push(sample_of_length(i, i % 2 == 0 ? 10 : 1000));  // 8 short, 8 long
  }
  ASSERT_EQ(learner->boundaries(), (std::vector<std::int64_t>{1000}));
  EXPECT_TRUE(q.has_full(8));
  EXPECT_FALSE(q.has_full(9));
  EXPECT_EQ(seqs(q.take(8)), (seq_list{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(seqs(q.take(8)), (seq_list{1, 3, 5, 7, 9, 11, 13, 15}));
}

TEST(BucketQueue, WithoutBucketsItIsOneQueueOldestFirst) {
  bucket_queue q;
  for (std::uint64_t i = 0; i < 10; ++i) {
    q.push(sample_of_length(i, static_cast<std::int64_t>(1000 - i * 90)));
  }
  EXPECT_TRUE(q.has_full(10));
  EXPECT_FALSE(q.has_full(11));
  EXPECT_EQ(seqs(q.take(4)), (seq_list{0, 1, 2, 3}));
  EXPECT_EQ(seqs(q.take(100)), (seq_list{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_TRUE(q.take(4).empty());
}

TEST(BucketQueue, AFullBucketGivesABatchTheOneWaitingLongestFirst) {
  bucket_queue q(by_length({100}));
  const std::vector<std::int64_t> lengths{150, 10, 160, 20, 170, 30, 40};
  for (std::uint64_t i = 0; i < lengths.size(); ++i) {
    q.push(sample_of_length(i, lengths[i]));
  }
  EXPECT_TRUE(q.has_full(3));
  EXPECT_TRUE(q.has_full(4));
  EXPECT_FALSE(q.has_full(5));
  EXPECT_EQ(seqs(q.take(3)), (seq_list{0, 2, 4}));  // bucket 1's oldest arrived first
  EXPECT_EQ(seqs(q.take(3)), (seq_list{1, 3, 5}));
  EXPECT_EQ(q.size(), 1u);
}

TEST(BucketQueue, WithoutAFullBucketTheOldestIsFilledFromItsNearestBuckets) {
  bucket_queue q(by_length({100, 200, 300}));
  // bucket 0: seq 3; bucket 1: nothing; bucket 2: seq 0, 4; bucket 3: seq 1, 2.
  const std::vector<std::int64_t> lengths{250, 350, 360, 50, 260};
  for (std::uint64_t i = 0; i < lengths.size(); ++i) {
    q.push(sample_of_length(i, lengths[i]));
  }
  EXPECT_FALSE(q.has_full(3));
  EXPECT_EQ(seqs(q.take(3)), (seq_list{0, 4, 1}));  // bucket 2, then bucket 3 (1 is empty)
  EXPECT_EQ(seqs(q.take(3)), (seq_list{2, 3}));     // bucket 3's rest, then bucket 0
}

// The policy holds a mixed batch back while more samples can come, forms one when the window
// is full (nothing more can come until a batch goes out), and mixes the epoch's tail.
TEST(BucketedPolicy, MixesBucketsOnlyWhenTheWindowIsFullOrTheEpochEnds) {
  auto policy = make_latency_aware_policy({4, 1, false, 0, by_length({100, 200})});
  policy->begin_epoch(0, 12);
  for (std::uint64_t i = 0; i < 9; ++i) {  // three in each bucket
    policy->add(sample_of_length(i, static_cast<std::int64_t>(50 + (i % 3) * 100)));
  }
  policy->set_window_full(false);
  EXPECT_FALSE(policy->take(0).has_value());
  policy->set_window_full(true);
  auto mixed = policy->take(0);
  ASSERT_TRUE(mixed.has_value());
  EXPECT_EQ(seqs(mixed->samples), (seq_list{0, 3, 6, 1}));  // bucket 0, then bucket 1
  policy->set_window_full(false);
  EXPECT_FALSE(policy->take(0).has_value());  // 5 wait, none of them a full bucket
  policy->add(sample_of_length(9, 260));      // bucket 2 is full
  auto full = policy->take(0);
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(seqs(full->samples), (seq_list{2, 5, 8, 9}));
  policy->add(sample_of_length(10, 150));
  policy->add(sample_of_length(11, 10));  // every sample still to come is ready: the tail
  auto tail = policy->take(0);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->samples.size(), 4u);
  EXPECT_TRUE(tail->last_in_epoch);
  EXPECT_EQ(tail->index, 2u);
}

// A sample of a bucket no other sample shares goes out with its epoch's last batch, never in
// the next epoch and never held past the end.
TEST(BucketedPolicy, ASampleOfARareBucketLeavesWithItsEpoch) {
  auto policy = make_latency_aware_policy({4, 1, false, 0, by_length({100})});
  policy->begin_epoch(0, 13);
  policy->begin_epoch(1, 13);
  policy->add(sample_of_length(0, 5000));  // the only long one, ready first
  std::vector<batch_plan> got;
  for (std::uint64_t i = 1; i < 13; ++i) {
    policy->add(sample_of_length(i, 10));
    while (auto plan = policy->take(0)) {
      got.push_back(std::move(*plan));
    }
  }
  for (std::uint64_t i = 0; i < 13; ++i) {  // epoch 1 is ready too
    policy->add(sample_of_length(i, 10, 1));
  }
  while (auto plan = policy->take(0)) {
    got.push_back(std::move(*plan));
  }
  ASSERT_GE(got.size(), 4u);
  for (std::size_t b = 0; b < 3; ++b) {
    EXPECT_EQ(got[b].epoch, 0u);
    EXPECT_EQ(got[b].samples.size(), 4u);
    const auto in_batch = seqs(got[b].samples);
    EXPECT_EQ(std::count(in_batch.begin(), in_batch.end(), 0u), 0);
  }
  EXPECT_EQ(got[3].epoch, 0u);
  EXPECT_EQ(seqs(got[3].samples), (seq_list{0}));
  EXPECT_TRUE(got[3].last_in_epoch);
}

// Each sample's length in a bucketed world's batches, and what padding them costs.
struct padding {
  std::uint64_t padded = 0;  ///< elements of the batches padded to their longest sample
  std::uint64_t used = 0;    ///< elements the samples hold
};

padding padding_of(const world_result& r) {
  padding out;
  for (const auto& b : r.batches) {
    std::int64_t longest = 0;
    for (const auto& s : b.samples) {
      longest = std::max(longest, length_of(s->ticket.sample_id));
      out.used += static_cast<std::uint64_t>(length_of(s->ticket.sample_id));
    }
    out.padded += static_cast<std::uint64_t>(longest) * b.samples.size();
  }
  return out;
}

// Exactly once per epoch (or quarantined: failing samples, and those charged with a killed
// worker's death too often), and every batch full but each epoch's last.
void expect_whole_epochs(const world_params& p, const world_result& r) {
  EXPECT_EQ(r.totals.lost, 0u);
  EXPECT_EQ(r.totals.duplicates, 0u);
  EXPECT_EQ(r.totals.delivered + r.totals.quarantined, p.samples * p.epochs);
  std::map<std::uint64_t, std::set<std::uint64_t>> seen;
  std::map<std::uint64_t, int> partial;
  for (const auto& b : r.batches) {
    for (const auto& s : b.samples) {
      EXPECT_EQ(s->ticket.epoch, b.epoch);
      EXPECT_TRUE(seen[b.epoch].insert(s->ticket.sample_id).second);
    }
    partial[b.epoch] += !b.samples.empty() && b.samples.size() < p.batch ? 1 : 0;
  }
  std::uint64_t delivered = 0;
  for (std::uint64_t e = 0; e < p.epochs; ++e) {
    delivered += seen[e].size();
    EXPECT_LE(partial[e], 1) << "epoch " << e;
  }
  EXPECT_EQ(delivered, r.totals.delivered);
}

// Batches that hold samples. An empty end marker is left out: whether a GPU needs one depends
// on which GPU takes the epoch's partial last batch (the GPUs take turns), not on the buckets.
std::size_t formed(const world_result& r) {
  return static_cast<std::size_t>(std::count_if(
      r.batches.begin(), r.batches.end(), [](const batch_plan& b) { return !b.samples.empty(); }));
}

std::uint64_t waste(const world_result& r) {
  auto w = padding_of(r);
  return w.padded - w.used;
}

class BucketedWorld : public ::testing::TestWithParam<int> {};

// Runs `p` for 8 seeds, with failing samples and killed workers or without, bucketed by
// `boundaries` and not; `check` gets the plain and the bucketed result of each.
template <class Check>
void for_each_world(world_params p, const std::vector<std::int64_t>& boundaries, Check check) {
  p.balanced = true;
  p.max_sample_retries = 1;
  for (std::uint64_t fail_every : {0, 17}) {
    for (std::uint64_t kill_every : {0, 29}) {
      p.fail_every = fail_every;
      p.kill_every = kill_every;
      for (std::uint64_t seed = 0; seed < 8; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " fail_every " + std::to_string(fail_every) +
                     " kill_every " + std::to_string(kill_every));
        p.buckets = {};
        auto plain = batcher_world(p, batching_policy::latency_aware, seed).run();
        p.buckets = by_length(boundaries);
        auto bucketed = batcher_world(p, batching_policy::latency_aware, seed).run();
        expect_whole_epochs(p, plain);
        expect_whole_epochs(p, bucketed);
        check(plain, bucketed);
      }
    }
  }
}

// Nothing lost or repeated with stragglers, quarantined samples, killed workers and equal
// shares per GPU; as many batches as without buckets; and the batches pad far less.
TEST_P(BucketedWorld, ExactlyOncePerEpochWithBucketsUnderLatencyAwareBatching) {
  world_params p;
  p.gpus = GetParam();
  for_each_world(p, {80, 160, 240, 320}, [](const world_result& plain, const world_result& b) {
    EXPECT_EQ(formed(b), formed(plain));
    EXPECT_LT(3 * waste(b), waste(plain));
  });
}

// A window smaller than the buckets can fill (3 batches of 8 per GPU; five buckets of up to 7
// samples each): without mixing when the window is full, these worlds would stall.
TEST_P(BucketedWorld, AWindowTheBucketsCouldFillNeverStalls) {
  world_params p;
  p.gpus = GetParam();
  p.window = 3 * p.batch * static_cast<std::uint64_t>(p.gpus);
  for_each_world(p, {80, 160, 240, 320}, [](const world_result& plain, const world_result& b) {
    EXPECT_EQ(formed(b), formed(plain));
    EXPECT_LE(b.peak_in_flight, b.window);
  });
}

INSTANTIATE_TEST_SUITE_P(Gpus, BucketedWorld, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace conveyor

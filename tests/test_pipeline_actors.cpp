// The actor pipeline end to end: real JPEGs in shards (and in a folder), real actors and
// threads; trainers on plain threads take batches from each GPU's channel and release them.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "support/pipeline_harness.hpp"

namespace conveyor {
namespace {

using testing::dataset_size;
using testing::make_spec;
using testing::temp_dir;
using testing::trainer_log;
using testing::write_jpeg_dataset;

class PipelineActors : public ::testing::TestWithParam<int> {};

TEST_P(PipelineActors, EverySampleReachesExactlyOneTrainerOncePerEpoch) {
  temp_dir dir;
  write_jpeg_dataset(dir.path());
  const int gpus = GetParam();
  const std::uint64_t epochs = 2;
  trainer_log log;
  pipeline_figures figures;
  {
    pipeline_runtime rt(make_spec(dir.path(), gpus, epochs));
    testing::run_trainers(rt, gpus, epochs, log);
    figures = rt.status()->figures();
    EXPECT_FALSE(rt.status()->failure().has_value());
  }
  EXPECT_TRUE(log.problems.empty()) << log.problems.front();
  for (std::uint64_t e = 0; e < epochs; ++e) {
    auto s = log.ledger.summary(e);
    EXPECT_EQ(s.delivered, dataset_size) << "epoch " << e;
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_EQ(s.lost, 0u);
  }
  EXPECT_TRUE(figures.finished);
  EXPECT_EQ(figures.totals.delivered, dataset_size * epochs);
  EXPECT_EQ(figures.totals.duplicates, 0u);
  EXPECT_EQ(figures.totals.lost, 0u);
  // Credits: never more samples in flight than the default window of in_order, (prefetch 1 +
  // 1) * batch 4 * gpus + 6 * 2 preprocessors * per_worker_limit 2.
  EXPECT_GT(figures.peak_in_flight, 0u);
  EXPECT_LE(figures.peak_in_flight, 2u * 4u * static_cast<std::uint64_t>(gpus) + 6u * 2u * 2u);
}

INSTANTIATE_TEST_SUITE_P(Feeders, PipelineActors, ::testing::Values(1, 4));

TEST(PipelineActorsShutdown, StopsCleanlyInTheMiddleOfAnEpoch) {
  temp_dir dir;
  write_jpeg_dataset(dir.path());
  pipeline_runtime rt(make_spec(dir.path(), 2, 3));
  auto first = rt.status()->channel(0)->pop();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->epoch, 0u);
  // The trainer still holds a batch and nothing was released: stop anyway.
  rt.stop();
  EXPECT_TRUE(rt.status()->channel(0)->closed());
  // Whatever was queued drains, then the channel reports the end instead of blocking.
  while (rt.status()->channel(1)->pop() != nullptr) {
  }
  rt.release(0, first->slot);  // a late release after stop is harmless
}  // ~pipeline_runtime joins every actor: a hang here fails the test by its CTest timeout

TEST(PipelineActorsShutdown, BadSamplesAreQuarantinedAndTheEpochCompletes) {
  temp_dir dir;
  {
    auto writer = dataset_writer::create(dir.path(), {"x"}, {1 << 20});
    ASSERT_TRUE(writer);
    for (int i = 0; i < 12; ++i) {
      auto bytes = testing::make_jpeg(48, 40, static_cast<std::uint64_t>(i));
      if (i == 3) {
        bytes.resize(bytes.size() / 2);  // truncated JPEG
      }
      if (i == 7) {
        bytes.assign(100, 0x42);  // not an image
      }
      ASSERT_TRUE(writer->append("img_" + std::to_string(i), 0, bytes.data(), bytes.size()));
    }
    ASSERT_TRUE(writer->finish());
  }
  auto spec = make_spec(dir.path(), 1, 1);
  pipeline_runtime rt(std::move(spec));
  std::uint64_t delivered = 0;
  for (;;) {
    auto batch = rt.status()->channel(0)->pop();
    ASSERT_NE(batch, nullptr);
    delivered += batch->size();
    rt.release(0, batch->slot);
    if (batch->last_in_epoch) {
      break;
    }
  }
  EXPECT_EQ(delivered, 10u);
  auto figures = rt.status()->figures();
  ASSERT_EQ(figures.quarantined.size(), 2u);
  // Named by shard and record; the reason names the sample's key.
  std::set<std::string> keys{figures.quarantined[0].key, figures.quarantined[1].key};
  auto shard = (dir / "shard-00000.cvs").string();
  EXPECT_EQ(keys, (std::set<std::string>{shard + " record 3", shard + " record 7"}));
  for (const auto& q : figures.quarantined) {
    EXPECT_NE(q.reason.find("decode_error"), std::string::npos) << q.reason;
    EXPECT_NE(q.reason.find("img_"), std::string::npos) << q.reason;
  }
  EXPECT_EQ(figures.totals.lost, 0u);
}

}  // namespace
}  // namespace conveyor

namespace conveyor {
namespace {

class LatencyAwareActors : public ::testing::TestWithParam<int> {};

// A 1 ns budget makes every sample a straggler after its first step: each one that holds a
// permit is handed off, the others are finished by their preprocessor. The exact counts prove
// the hand-off loses nothing and runs no step twice.
TEST_P(LatencyAwareActors, EverySampleHandedOffMidChainRunsEachStepOnce) {
  temp_dir dir;
  write_jpeg_dataset(dir.path());
  const int gpus = GetParam();
  const std::uint64_t epochs = 2;
  auto spec = make_spec(dir.path(), gpus, epochs);
  spec.policy = batching_policy::latency_aware;
  spec.settings.hand_off = true;
  spec.settings.fixed_budget_ns = 1;
  spec.stragglers = 2;
  const auto steps = spec.chain.size();
  trainer_log log;
  std::uint64_t handoffs = 0;
  std::uint64_t steps_run = 0;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, gpus, epochs, log);
    handoffs = rt.status()->figures().handoffs;
    steps_run = rt.status()->steps_executed();
  }
  EXPECT_TRUE(log.problems.empty()) << log.problems.front();
  testing::expect_every_sample_once(log, epochs);
  EXPECT_GT(handoffs, 0u);
  EXPECT_LE(handoffs, dataset_size * epochs);
  EXPECT_EQ(steps_run, dataset_size * epochs * steps);
}

INSTANTIATE_TEST_SUITE_P(Feeders, LatencyAwareActors, ::testing::Values(1, 4));

}  // namespace
}  // namespace conveyor

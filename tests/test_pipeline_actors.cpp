// The actor pipeline end to end: real JPEGs in shards (and in a folder), real actors and
// threads; trainers on plain threads take batches from each GPU's channel and release them.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "actors/pipeline_runtime.hpp"
#include "core/dataset_writer.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr std::uint64_t dataset_size = 61;  // prime: partial last batches everywhere

void write_jpeg_dataset(const std::filesystem::path& dir) {
  auto writer = dataset_writer::create(dir, {"a", "b", "c"}, {64 * 1024});
  ASSERT_TRUE(writer);
  for (std::uint64_t i = 0; i < dataset_size; ++i) {
    auto jpeg =
        testing::make_jpeg(40 + static_cast<int>(i % 9) * 7, 36 + static_cast<int>(i % 5) * 5, i);
    ASSERT_TRUE(writer->append("img_" + std::to_string(i), static_cast<std::int32_t>(i % 3),
                               jpeg.data(), jpeg.size()));
  }
  ASSERT_TRUE(writer->finish());
}

pipeline_spec make_spec(const std::filesystem::path& dir, int gpus, std::uint64_t epochs) {
  auto source = open_sample_source(dir, dataset_format::shards);
  EXPECT_TRUE(source) << source.error().what();
  random_resized_crop_spec crop;
  crop.height = 24;
  crop.width = 20;
  auto chain = transform_chain::build({decode_spec{}, crop, flip_spec{0.5}, normalize_spec{}});
  EXPECT_TRUE(chain) << chain.error().what();
  pipeline_spec spec{*source, *chain, {}, batching_policy::in_order};
  spec.settings.seed = 11;
  spec.settings.epochs = epochs;
  spec.settings.batch_size = 4;
  spec.settings.gpus = gpus;
  spec.settings.workers = 2;
  spec.prefetch_batches = 1;
  spec.readers = 2;
  spec.monitor_interval = std::chrono::milliseconds(0);
  return spec;
}

struct trainer_log {
  std::mutex mutex;
  epoch_ledger ledger{dataset_size};
  std::vector<std::string> problems;
  std::uint64_t batches = 0;
};

// One trainer per GPU, as a data-parallel job runs them: take every batch of every epoch,
// check it, give it back.
void train(pipeline_runtime& rt, int gpu, std::uint64_t epochs, trainer_log& log) {
  std::uint64_t epoch = 0;
  while (epoch < epochs) {
    auto batch = rt.status()->channel(gpu)->pop();
    if (!batch) {
      std::lock_guard<std::mutex> lock(log.mutex);
      log.problems.push_back("channel closed before the end");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(log.mutex);
      ++log.batches;
      if (batch->epoch != epoch || batch->gpu != gpu) {
        log.problems.push_back("batch of epoch " + std::to_string(batch->epoch) + " gpu " +
                               std::to_string(batch->gpu) + " out of place");
      }
      if (batch->size() > 0 &&
          (batch->shape != std::array<int, 4>{static_cast<int>(batch->size()), 3, 24, 20} ||
           batch->bytes.size() != batch->size() * 3 * 24 * 20 * 4)) {
        log.problems.push_back("bad batch shape");
      }
      for (std::size_t i = 0; i < batch->size(); ++i) {
        log.ledger.deliver(batch->epoch, batch->sample_ids[i]);
        if (batch->labels[i] != static_cast<std::int32_t>(batch->sample_ids[i] % 3)) {
          log.problems.push_back("label of sample " + std::to_string(batch->sample_ids[i]));
        }
      }
    }
    epoch += batch->last_in_epoch ? 1 : 0;
    rt.release(gpu, batch->slot);
  }
}

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
    std::vector<std::thread> trainers;
    for (int g = 0; g < gpus; ++g) {
      trainers.emplace_back([&, g] { train(rt, g, epochs, log); });
    }
    for (auto& t : trainers) {
      t.join();
    }
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
  // Credits: never more samples in flight than the window (prefetch 1 + 1) * batch * gpus.
  EXPECT_GT(figures.peak_in_flight, 0u);
  EXPECT_LE(figures.peak_in_flight, 2u * 4u * static_cast<std::uint64_t>(gpus));
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
  std::set<std::string> keys{figures.quarantined[0].key, figures.quarantined[1].key};
  EXPECT_EQ(keys, (std::set<std::string>{"img_3", "img_7"}));
  for (const auto& q : figures.quarantined) {
    EXPECT_NE(q.reason.find("decode_error"), std::string::npos) << q.reason;
  }
  EXPECT_EQ(figures.totals.lost, 0u);
}

}  // namespace
}  // namespace conveyor

namespace conveyor {
namespace {

class LatencyAwareActors : public ::testing::TestWithParam<int> {};

// A 1 ns budget sends every sample to a straggler actor after its first step: the exact
// counts prove the hand-off loses nothing and runs no step twice.
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
    std::vector<std::thread> trainers;
    for (int g = 0; g < gpus; ++g) {
      trainers.emplace_back([&, g] { train(rt, g, epochs, log); });
    }
    for (auto& t : trainers) {
      t.join();
    }
    handoffs = rt.status()->figures().handoffs;
    steps_run = rt.status()->steps_executed();
  }
  EXPECT_TRUE(log.problems.empty()) << log.problems.front();
  for (std::uint64_t e = 0; e < epochs; ++e) {
    auto s = log.ledger.summary(e);
    EXPECT_EQ(s.delivered, dataset_size);
    EXPECT_EQ(s.duplicates + s.lost, 0u);
  }
  EXPECT_EQ(handoffs, dataset_size * epochs);
  EXPECT_EQ(steps_run, dataset_size * epochs * steps);
}

INSTANTIATE_TEST_SUITE_P(Feeders, LatencyAwareActors, ::testing::Values(1, 4));

}  // namespace
}  // namespace conveyor

#pragma once
/// The harness of the end-to-end actor tests: a dataset of real JPEGs in shards, a pipeline
/// spec over it, and trainers on plain threads (one per GPU, as a data-parallel job runs them)
/// that take every batch, check it, record what they received, and give it back.

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "actors/pipeline_runtime.hpp"
#include "core/storage/dataset_writer.hpp"
#include "support/test_support.hpp"

namespace conveyor::testing {

inline constexpr std::uint64_t dataset_size = 61;  // prime: partial last batches everywhere

inline void write_jpeg_dataset(const std::filesystem::path& dir) {
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

/// decode -> crop 24x20 -> flip -> normalize; `after_decode` (steps that leave the fields as they
/// are, e.g. user steps) runs between the decode and the crop.
inline pipeline_spec make_spec(const std::filesystem::path& dir, int gpus, std::uint64_t epochs,
                               dataset_format format = dataset_format::shards,
                               const std::vector<transform_spec>& after_decode = {}) {
  auto source = open_sample_source(dir, format);
  EXPECT_TRUE(source) << source.error().what();
  random_resized_crop_spec crop;
  crop.height = 24;
  crop.width = 20;
  flip_spec flip;
  flip.p = 0.5;
  std::vector<transform_spec> steps{decode_spec{}};
  steps.insert(steps.end(), after_decode.begin(), after_decode.end());
  steps.insert(steps.end(), {crop, flip, normalize_spec{}});
  auto chain = transform_chain::build(steps);
  EXPECT_TRUE(chain) << chain.error().what();
  auto schema = std::make_shared<const sample_schema>(chain->schema());
  pipeline_spec spec{*source, *chain, schema, schema, {}, batching_policy::in_order};
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

/// Every sample of the dataset delivered once in each of epochs 0 .. epochs - 1 of `log`.
inline void expect_every_sample_once(const trainer_log& log, std::uint64_t epochs) {
  for (std::uint64_t e = 0; e < epochs; ++e) {
    auto s = log.ledger.summary(e);
    EXPECT_EQ(s.delivered, dataset_size) << "epoch " << e;
    EXPECT_EQ(s.duplicates + s.lost, 0u) << "epoch " << e;
  }
}

// One trainer per GPU, as a data-parallel job runs them: take every batch of every epoch,
// check it, give it back.
inline void train(pipeline_runtime& rt, int gpu, std::uint64_t epochs, trainer_log& log) {
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
      const auto& image = batch->fields.at(1);  // label, image
      const std::array<std::int64_t, 4> shape{image.shape[0], image.shape[1], image.shape[2],
                                              image.shape[3]};
      if (batch->size() > 0 &&
          (shape !=
               std::array<std::int64_t, 4>{static_cast<std::int64_t>(batch->size()), 3, 24, 20} ||
           image.type != dtype::float32 || batch->external == nullptr)) {
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
    if (rt.release(gpu, batch->slot)) {  // idempotent: the buffer must not enter its ring twice
      std::lock_guard<std::mutex> lock(log.mutex);
      log.problems.push_back("a second release of buffer " + std::to_string(batch->slot));
    }
  }
}

/// Runs one trainer thread per GPU until each has seen `epochs` epochs (or its channel closed).
inline void run_trainers(pipeline_runtime& rt, int gpus, std::uint64_t epochs, trainer_log& log) {
  std::vector<std::thread> trainers;
  for (int g = 0; g < gpus; ++g) {
    trainers.emplace_back([&, g] { train(rt, g, epochs, log); });
  }
  for (auto& t : trainers) {
    t.join();
  }
}

}  // namespace conveyor::testing

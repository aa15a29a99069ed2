// A Python Dataset under the actors (core/python/python_step.hpp): the pipeline's readers,
// preprocessors, straggler actors, batcher and feeders over worker processes that run the
// dataset this test writes. Every sample once per epoch with the values its __getitem__ gave;
// samples handed off with their worker still at them, never redone, and never more processes
// than the pool's places; exceptions and workers that die are retried, then quarantined, naming
// the index and the reason.

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "actors/pipeline_runtime.hpp"
#include "core/python/python_dataset.hpp"
#include "core/python/python_step.hpp"
#include "support/python_workers.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t samples = 23;  // prime: a partial last batch

constexpr const char* datasets_py = R"(
import os, signal
import numpy as np


class Values:
    def __len__(self):
        return 23

    def __getitem__(self, i):
        return np.full((2, 3), i, np.float32), i


class Faulty(Values):
    def __init__(self):
        self.marks = os.path.dirname(os.path.abspath(__file__))

    def __getitem__(self, i):
        if i == 3:
            raise ValueError("sample %d is bad" % i)
        if i == 5:
            os._exit(9)
        mark = os.path.join(self.marks, "killed-%d" % i)
        if i == 8 and not os.path.exists(mark):  # once: its retry succeeds
            open(mark, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)
)";

class PythonPipeline : public ::testing::Test {
 protected:
  // A pipeline over dataset `cls` of datasets_py, its pool made for its preprocessors and
  // straggler actors.
  pipeline_spec make(const std::string& cls, std::uint64_t epochs) {
    auto launch = testing::python_worker_launch(dir_, "datasets", datasets_py, cls);
    pool_ = worker_pool::make(launch, workers + stragglers);
    auto layout = probe_python_dataset(*pool_, 0, 1, 120s);
    EXPECT_TRUE(layout) << layout.error().what();
    auto chain = transform_chain::build({python_step_spec(pool_, *layout, 120s)});
    EXPECT_TRUE(chain) << chain.error().what();
    auto schema = std::make_shared<const sample_schema>(chain->schema());
    pipeline_spec spec{std::make_shared<python_dataset>(samples, order_),
                       *chain,
                       schema,
                       schema,
                       {},
                       batching_policy::in_order};
    spec.settings.seed = 5;
    spec.settings.epochs = epochs;
    spec.settings.batch_size = 4;
    spec.settings.gpus = 1;
    spec.settings.workers = workers;
    spec.stragglers = stragglers;
    spec.prefetch_batches = 1;
    spec.readers = 1;
    spec.monitor_interval = 0ms;
    return spec;
  }

  // Takes every batch of `epochs` epochs; checks each sample's values against its index.
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> drain(pipeline_runtime& rt,
                                                               std::uint64_t epochs) {
    std::multiset<std::pair<std::uint64_t, std::uint64_t>> seen;
    for (std::uint64_t epoch = 0; epoch < epochs;) {
      auto batch = rt.status()->channel(0)->pop();
      if (!batch) {
        ADD_FAILURE() << "the channel closed in epoch " << epoch;
        break;
      }
      const auto& array = batch->fields.at(0);  // sample.0: N x 2 x 3 float32
      const auto& index = batch->fields.at(1);  // sample.1: N int64
      EXPECT_EQ(array.type, dtype::float32);
      EXPECT_EQ(index.type, dtype::int64);
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const auto id = batch->sample_ids[i];
        seen.insert({batch->epoch, id});
        float v = 0;
        std::memcpy(&v, batch->host() + array.values + (i * 6 + 5) * sizeof v, sizeof v);
        std::int64_t n = 0;
        std::memcpy(&n, batch->host() + index.values + i * sizeof n, sizeof n);
        const auto want = order_.empty() ? id : order_.at(id);  // the dataset index
        EXPECT_EQ(v, static_cast<float>(want));
        EXPECT_EQ(n, static_cast<std::int64_t>(want));
      }
      epoch += batch->last_in_epoch ? 1 : 0;
      rt.release(0, batch->slot);
    }
    return seen;
  }

  static constexpr int workers = 2;
  static constexpr int stragglers = 1;
  testing::temp_dir dir_;
  std::shared_ptr<worker_pool> pool_;
  std::vector<std::uint64_t> order_;  ///< a trainer's sampler's order; empty: the dataset's
};

TEST_F(PythonPipeline, EverySampleOnceAsItsGetitemMadeItAndItsLayoutFromTheFirst) {
  auto spec = make("Values", 2);
  ASSERT_EQ(spec.schema->fields.size(), 2u);
  EXPECT_EQ(spec.schema->fields[0].name, "sample.0");
  EXPECT_EQ(describe(spec.schema->fields[0].type), "float32 [2, 3]");
  EXPECT_EQ(describe(spec.schema->fields[1].type), "int64 []");
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> seen;
  {
    pipeline_runtime rt(std::move(spec));
    seen = drain(rt, 2);
  }
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> want;
  for (std::uint64_t e = 0; e < 2; ++e) {
    for (std::uint64_t i = 0; i < samples; ++i) {
      want.insert({e, i});
    }
  }
  EXPECT_EQ(seen, want);
}

// A trainer's sampler's order (a WeightedRandomSampler's: repeats, a subset): each position of
// each epoch once, made by dataset[order[position]].
TEST_F(PythonPipeline, InASamplersOrderEachPositionIsDatasetOfItsIndexOnce) {
  order_ = {7, 7, 0, 22, 3, 7, 11};
  auto spec = make("Values", 2);
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> seen;
  {
    pipeline_runtime rt(std::move(spec));
    seen = drain(rt, 2);
  }
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> want;
  for (std::uint64_t e = 0; e < 2; ++e) {
    for (std::uint64_t j = 0; j < order_.size(); ++j) {
      want.insert({e, j});
    }
  }
  EXPECT_EQ(seen, want);
}

// A 1 ns budget makes every sample a straggler while its worker runs it: each one that holds a
// permit is handed off with its worker still at it. Each sample runs once (the steps count),
// and no more processes start than the pool has places.
TEST_F(PythonPipeline, SamplesHandedOffWithTheirWorkerRunOnceAndNoProcessIsAdded) {
  auto spec = make("Values", 2);
  spec.policy = batching_policy::latency_aware;
  spec.settings.hand_off = true;
  spec.settings.fixed_budget_ns = 1;
  std::uint64_t handoffs = 0;
  std::uint64_t steps_run = 0;
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> seen;
  {
    pipeline_runtime rt(std::move(spec));
    seen = drain(rt, 2);
    handoffs = rt.status()->figures().handoffs;
    steps_run = rt.status()->steps_executed();
  }
  EXPECT_EQ(seen.size(), samples * 2);
  const std::set<std::pair<std::uint64_t, std::uint64_t>> distinct(seen.begin(), seen.end());
  EXPECT_EQ(distinct.size(), samples * 2);
  EXPECT_GT(handoffs, 0u);
  EXPECT_EQ(steps_run, samples * 2);
  EXPECT_LE(pool_->started(), static_cast<std::uint64_t>(workers + stragglers));
}

TEST_F(PythonPipeline, ExceptionsAndDeathsAreRetriedThenQuarantinedByIndexAndReason) {
  auto spec = make("Faulty", 1);
  spec.settings.max_sample_retries = 1;
  std::multiset<std::pair<std::uint64_t, std::uint64_t>> seen;
  pipeline_figures figures;
  {
    pipeline_runtime rt(std::move(spec));
    seen = drain(rt, 1);
    figures = rt.status()->figures();
  }
  EXPECT_EQ(seen.size(), samples - 2);
  EXPECT_EQ(seen.count({0, 3}) + seen.count({0, 5}), 0u);
  EXPECT_EQ(seen.count({0, 8}), 1u);  // its worker was killed once; its retry delivered it
  ASSERT_EQ(figures.quarantined.size(), 2u);
  for (const auto& q : figures.quarantined) {
    if (q.key == "dataset[3]") {
      EXPECT_NE(q.reason.find("ValueError: sample 3 is bad"), std::string::npos) << q.reason;
    } else {
      EXPECT_EQ(q.key, "dataset[5]");
      EXPECT_NE(q.reason.find("exited with code 9"), std::string::npos) << q.reason;
    }
  }
  EXPECT_EQ(figures.totals.lost, 0u);
  // The workers that died were replaced: more starts than places.
  EXPECT_GT(pool_->started(), static_cast<std::uint64_t>(workers + stragglers));
}

}  // namespace
}  // namespace conveyor

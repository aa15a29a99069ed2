// Resuming a run mid-epoch (pipeline::state, pipeline::open(..., resume)): a trainer stops
// after k batches, and a new pipeline opened from the state delivers exactly the rest of each
// epoch, with the same per-sample random transforms as a run never interrupted.
#include <gtest/gtest.h>

#include <conveyor/pipeline.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr int images = 37;
constexpr std::uint64_t epochs = 2;

std::filesystem::path setup(const temp_dir& dir) {
  auto file = dir / "node.toml";
  std::ofstream(file) << "[dataset]\npath = \"" << testing::make_image_folder(dir, images).string()
                      << "\"\nformat = \"folder\"\nseed = 7\n"
                         "[pipeline]\nbatch_size = 4\nprefetch_batches = 1\n"
                         "[trainer]\nepochs = "
                      << epochs
                      << "\n[monitor]\ninterval_ms = 1000\n"
                         "[[transform]]\nop = \"decode\"\n"
                         "[[transform]]\nop = \"random_resized_crop\"\nsize = [12, 10]\n"
                         "[[transform]]\nop = \"flip\"\n"
                         "[[transform]]\nop = \"to_uint8\"\n";
  return file;
}

/// Per epoch, each sample id received and its pixels (every time it was received).
struct received {
  std::mutex mutex;
  std::map<std::uint64_t, std::multimap<std::uint64_t, std::vector<std::uint8_t>>> epochs;

  void add(const batch& b) {
    auto t = b.tensor();
    const auto per_sample = b.size() == 0 ? 0 : t.bytes() / b.size();
    const auto* data = static_cast<const std::uint8_t*>(t.data);
    std::lock_guard<std::mutex> lock(mutex);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto* at = data + i * per_sample;
      epochs[b.epoch()].emplace(b.sample_ids()[i], std::vector<std::uint8_t>(at, at + per_sample));
    }
  }
};

/// Whether GPU `gpu`'s trainer stops after taking `b` (its `taken`-th batch, from 1).
using stop_rule = std::function<bool(const batch& b, std::uint64_t taken)>;

/// One thread per GPU takes batches into `into` until `stop` says so or the run ends.
void train(pipeline& p, received& into, const stop_rule& stop) {
  std::vector<std::thread> threads;
  for (int g = 0; g < p.gpus(); ++g) {
    threads.emplace_back([&, g] {
      for (std::uint64_t taken = 1;; ++taken) {
        auto b = p.next(g);
        if (!b) {
          EXPECT_EQ(b.error().code(), errc::not_found) << b.error().what();
          return;
        }
        into.add(*b);
        if (stop && stop(*b, taken)) {
          return;
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
}

struct resume_case {
  std::string policy;
  int gpus;
  std::string stop;     ///< "start", "middle", "end" (of epoch 0), "next" (early in epoch 1)
  bool blocks = false;  ///< dataset.shuffle = "blocks" (blocks of 2 samples, 3 a span)
};

void PrintTo(const resume_case& c, std::ostream* out) {
  *out << c.policy << ", " << c.gpus << " GPUs, stop at " << c.stop
       << (c.blocks ? ", in blocks" : "");
}

std::string case_name(const ::testing::TestParamInfo<resume_case>& info) {
  return info.param.policy + "_" + std::to_string(info.param.gpus) + "gpus_" + info.param.stop +
         (info.param.blocks ? "_blocks" : "");
}

// The overrides of case `c`.
std::vector<std::string> overrides_of(const resume_case& c) {
  std::vector<std::string> out{"gpus=" + std::to_string(c.gpus),
                               "batching.policy=\"" + c.policy + "\""};
  if (c.blocks) {
    for (auto kv :
         {"dataset.shuffle=\"blocks\"", "dataset.shuffle_block=\"4K\"", "dataset.shuffle_span=3"}) {
      out.emplace_back(kv);
    }
  }
  return out;
}

stop_rule rule_for(const std::string& stop) {
  if (stop == "start") {
    return [](const batch&, std::uint64_t taken) { return taken == 1; };
  }
  if (stop == "middle") {  // each GPU's share of the 10 batches of epoch 0 is 10 / gpus or so
    return [](const batch& b, std::uint64_t taken) { return taken == 2 || b.last_in_epoch(); };
  }
  if (stop == "end") {
    return [](const batch& b, std::uint64_t) { return b.epoch() == 0 && b.last_in_epoch(); };
  }
  return [](const batch& b, std::uint64_t) { return b.epoch() == 1; };
}

class PipelineResume : public ::testing::TestWithParam<resume_case> {};

TEST_P(PipelineResume, TheRestOfEveryEpochComesExactlyOnceWithTheSamePixels) {
  const auto& c = GetParam();
  temp_dir dir;
  auto topology = setup(dir);
  const auto overrides = overrides_of(c);
  received whole;  // a run never interrupted
  {
    auto p = pipeline::open(topology, overrides);
    ASSERT_TRUE(p) << p.error().what();
    train(*p, whole, {});
  }
  received before;
  received after;
  run_state state;
  {
    auto p = pipeline::open(topology, overrides);
    ASSERT_TRUE(p) << p.error().what();
    train(*p, before, rule_for(c.stop));
    state = p->state();
  }
  EXPECT_LT(state.bytes.size(), 200u);
  auto p = pipeline::open(topology, overrides, state);
  ASSERT_TRUE(p) << p.error().what();
  // Once every GPU has had its end of epoch 0, the run resumes in epoch 1.
  EXPECT_EQ(p->info().start_epoch, c.stop == "end" || c.stop == "next" ? 1u : 0u);
  train(*p, after, {});
  EXPECT_TRUE(p->report().finished);
  EXPECT_EQ(p->report().duplicates, 0u);
  EXPECT_EQ(p->report().lost, 0u);

  for (std::uint64_t e = 0; e < epochs; ++e) {
    for (std::uint64_t id = 0; id < images; ++id) {
      auto twice = before.epochs[e].count(id) + after.epochs[e].count(id);
      EXPECT_EQ(twice, 1u) << "epoch " << e << " sample " << id;
      auto from = after.epochs[e].find(id);
      if (from != after.epochs[e].end()) {
        EXPECT_EQ(from->second, whole.epochs[e].find(id)->second)
            << "epoch " << e << " sample " << id << ": pixels differ after the resume";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    StopPoints, PipelineResume,
    ::testing::Values(
        resume_case{"in_order", 1, "start"}, resume_case{"in_order", 1, "middle"},
        resume_case{"in_order", 1, "end"}, resume_case{"in_order", 1, "next"},
        resume_case{"in_order", 4, "start"}, resume_case{"in_order", 4, "middle"},
        resume_case{"in_order", 4, "end"}, resume_case{"in_order", 4, "next"},
        resume_case{"latency_aware", 1, "start"}, resume_case{"latency_aware", 1, "middle"},
        resume_case{"latency_aware", 1, "end"}, resume_case{"latency_aware", 1, "next"},
        resume_case{"latency_aware", 4, "start"}, resume_case{"latency_aware", 4, "middle"},
        resume_case{"latency_aware", 4, "end"}, resume_case{"latency_aware", 4, "next"},
        resume_case{"in_order", 1, "middle", true}, resume_case{"in_order", 4, "end", true},
        resume_case{"latency_aware", 1, "next", true},
        resume_case{"latency_aware", 4, "middle", true}),
    case_name);

// The state of a run that stopped after a few batches, and its topology.
struct stopped_run {
  temp_dir dir;
  std::filesystem::path topology = setup(dir);
  run_state state;

  stopped_run() {
    auto p = pipeline::open(topology);
    EXPECT_TRUE(p) << p.error().what();
    received ignored;
    train(*p, ignored, rule_for("middle"));
    state = p->state();
  }
};

TEST(PipelineResume, ADamagedOrTruncatedStateIsRefusedNeverAFreshStart) {
  stopped_run run;
  auto damaged = run.state;
  damaged.bytes[damaged.bytes.size() / 2] ^= 0x10;
  auto p = pipeline::open(run.topology, {}, damaged);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), errc::checksum_mismatch) << p.error().what();
  EXPECT_NE(p.error().message().find("the state given to open()"), std::string::npos);

  auto truncated = run.state;
  truncated.bytes.resize(truncated.bytes.size() - 9);
  p = pipeline::open(run.topology, {}, truncated);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), errc::corrupt_shard) << p.error().what();

  p = pipeline::open(run.topology, {}, run_state{});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), errc::corrupt_shard) << p.error().what();

  auto later = run.state;
  later.bytes[8] = 3;  // the format version's low byte: a state from a later Conveyor
  p = pipeline::open(run.topology, {}, later);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("version"), std::string::npos) << p.error().what();
}

TEST(PipelineResume, AStateOfAnotherRunIsRefusedNamingTheKey) {
  stopped_run run;
  auto p = pipeline::open(run.topology, {"dataset.seed=8"}, run.state);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), errc::invalid_config);
  EXPECT_NE(p.error().message().find("dataset.seed"), std::string::npos) << p.error().what();
  p = pipeline::open(run.topology, {"trainer.epochs=3"}, run.state);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("trainer.epochs"), std::string::npos) << p.error().what();
  p = pipeline::open(run.topology, {"dataset.shuffle=\"blocks\"", "dataset.shuffle_block=\"1K\""},
                     run.state);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("dataset.shuffle"), std::string::npos) << p.error().what();
  // Another GPU count, batch size or policy is the same run: it resumes.
  p = pipeline::open(run.topology, {"gpus=2", "pipeline.batch_size=5"}, run.state);
  ASSERT_TRUE(p) << p.error().what();
}

TEST(PipelineResume, AFinishedRunResumesToNothing) {
  temp_dir dir;
  auto topology = setup(dir);
  run_state state;
  {
    auto p = pipeline::open(topology);
    ASSERT_TRUE(p) << p.error().what();
    received all;
    train(*p, all, {});
    state = p->state();
  }
  auto p = pipeline::open(topology, {}, state);
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_EQ(p->info().start_epoch, epochs);
  auto none = p->next(0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::not_found);
}

}  // namespace
}  // namespace conveyor

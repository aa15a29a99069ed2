// The public embedding API (include/conveyor/pipeline.hpp) as a trainer uses it.
#include <gtest/gtest.h>

#include <conveyor/pipeline.hpp>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

constexpr int images = 23;

std::filesystem::path setup(const temp_dir& dir) {
  for (int i = 0; i < images; ++i) {
    auto cls = dir / "images" / ("c" + std::to_string(i % 3));
    std::filesystem::create_directories(cls);
    testing::write_file(cls / ("i" + std::to_string(i) + ".jpg"),
                        testing::make_jpeg(50 + i, 40 + i % 7, static_cast<std::uint64_t>(i)));
  }
  auto file = dir / "node.toml";
  std::ofstream(file) << "[dataset]\npath = \"" << (dir / "images").string()
                      << "\"\nformat = \"folder\"\n"
                         "[pipeline]\nbatch_size = 3\nprefetch_batches = 1\n"
                         "[trainer]\nepochs = 2\n[monitor]\ninterval_ms = 1000\n"
                         "[[transform]]\nop = \"decode\"\n"
                         "[[transform]]\nop = \"center_crop\"\nsize = [16, 12]\n"
                         "[[transform]]\nop = \"to_uint8\"\n";
  return file;
}

class EmbeddingApi : public ::testing::TestWithParam<int> {};

TEST_P(EmbeddingApi, EpochRangesDeliverEverySampleOnceAcrossGpus) {
  temp_dir dir;
  const int gpus = GetParam();
  auto p = pipeline::open(setup(dir), {"gpus=" + std::to_string(gpus)});
  ASSERT_TRUE(p) << p.error().what();
  ASSERT_EQ(p->gpus(), gpus);
  ASSERT_EQ(p->dataset_size(), static_cast<std::uint64_t>(images));
  std::mutex mutex;
  std::vector<std::multiset<std::uint64_t>> seen(2);
  std::vector<std::thread> threads;
  for (int g = 0; g < gpus; ++g) {
    threads.emplace_back([&, g] {
      for (std::uint64_t e = 0; e < p->epochs(); ++e) {
        for (auto& b : p->epoch(e, g)) {
          auto t = b.tensor();
          EXPECT_EQ(t.type, dtype::uint8);
          EXPECT_EQ(t.shape,
                    (std::array<std::int64_t, 4>{static_cast<std::int64_t>(b.size()), 3, 16, 12}));
          EXPECT_EQ(t.device, -1);
          EXPECT_EQ(b.labels().size(), b.size());
          EXPECT_EQ(b.keys().size(), b.size());
          EXPECT_EQ(b.gpu(), g);
          std::lock_guard<std::mutex> lock(mutex);
          seen[e].insert(b.sample_ids().begin(), b.sample_ids().end());
        }
      }
      auto after = p->next(g);
      ASSERT_FALSE(after);
      EXPECT_EQ(after.error().code(), errc::not_found);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const auto& epoch : seen) {
    ASSERT_EQ(epoch.size(), static_cast<std::size_t>(images));
    for (std::uint64_t id = 0; id < images; ++id) {
      EXPECT_EQ(epoch.count(id), 1u) << "sample " << id;
    }
  }
  auto report = p->report();
  EXPECT_TRUE(report.finished);
  EXPECT_EQ(report.delivered, 2u * images);
  EXPECT_EQ(report.duplicates + report.lost + report.quarantined, 0u);
}

INSTANTIATE_TEST_SUITE_P(Gpus, EmbeddingApi, ::testing::Values(1, 4));

TEST(EmbeddingApiShutdown, DestroyingThePipelineMidEpochWhileHoldingABatchIsClean) {
  temp_dir dir;
  std::optional<batch> held;
  {
    auto p = pipeline::open(setup(dir));
    ASSERT_TRUE(p) << p.error().what();
    auto first = p->next(0);
    ASSERT_TRUE(first);
    EXPECT_GT(first->size(), 0u);
    held = std::move(*first);
  }  // the pipeline is destroyed mid-epoch: its actors stop; the held batch keeps its buffer
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ(held->tensor().bytes(), held->size() * 3 * 16 * 12) << "still readable";
  held->release();  // after the pipeline is gone: harmless
}

TEST(EmbeddingApiErrors, BadTopologyAndBadGpuAreErrors) {
  temp_dir dir;
  auto file = setup(dir);
  auto bad = pipeline::open(file, {"pipeline.batch_size=0"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), errc::invalid_config);
  auto p = pipeline::open(file);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->next(1));
  EXPECT_FALSE(p->next(-1));
}

}  // namespace
}  // namespace conveyor

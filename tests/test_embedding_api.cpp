// The public embedding API (include/conveyor/pipeline.hpp) as a trainer uses it.
#include <gtest/gtest.h>

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <conveyor/log.hpp>
#include <conveyor/pipeline.hpp>
#include <fstream>
#include <mutex>
#include <opencv2/core/utility.hpp>
#include <set>
#include <thread>
#include <type_traits>

#include "support/app_process.hpp"
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
  const auto view = held->tensor();
  EXPECT_EQ(view.bytes(), held->size() * 3 * 16 * 12) << "still readable";
  std::vector<std::uint8_t> bytes(static_cast<std::uint8_t*>(view.data),
                                  static_cast<std::uint8_t*>(view.data) + view.bytes());
  EXPECT_TRUE(std::any_of(bytes.begin(), bytes.end(), [](auto b) { return b != 0; }))
      << "the batch's pixels, read after the feeder that wrote them is gone (ASan: no "
         "use after free)";
  held->release();  // after the pipeline is gone: harmless
}

// Issue 14's third defect, from the trainer's side: a fault of the device's asynchronous work
// (here the third copy of the host engine that stands in for a GPU) reaches next() as an error
// naming the device and the batch, instead of a wait for a batch that never comes.
TEST(EmbeddingApiFaults, ACopyFaultReachesNextAsAnErrorNamingTheBatch) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir), {"faults.copy_fault=3", "pipeline.next_timeout_s=600"});
  ASSERT_TRUE(p) << p.error().what();
  std::vector<std::uint64_t> got;
  expected<batch> next = p->next(0);
  while (next) {
    got.push_back(next->index());
    next = p->next(0);
  }
  // Batches 0 and 1 were complete, but the failure may overtake them on their way to next().
  ASSERT_LE(got.size(), 2u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], i) << "only the batches before the fault, in order";
  }
  EXPECT_EQ(next.error().code(), errc::device_error) << next.error().what();
  // The batch being polled when the fault struck is named: batch 2, or one before it still on
  // its way (a sticky fault fails every later query, as CUDA's do).
  for (const char* part : {"feeder 0", "of epoch 0", "host engine", "copy 3"}) {
    EXPECT_NE(next.error().message().find(part), std::string::npos)
        << part << ": " << next.error().what();
  }
}

TEST(EmbeddingApiShutdown, NoBatchIsHandedOutAfterShutdown) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  auto first = p->next(0);  // the pipeline is running and has batches ready
  ASSERT_TRUE(first);
  p->shutdown();
  auto after = p->next(0);
  ASSERT_FALSE(after) << "queued batches of a stopped pipeline are not handed out";
  EXPECT_EQ(after.error().code(), errc::not_found);
  auto range = p->epoch(0, 0);
  std::multiset<std::uint64_t> seen;
  for (auto& b : range) {
    seen.insert(b.sample_ids().begin(), b.sample_ids().end());
  }
  EXPECT_TRUE(seen.empty());
  ASSERT_TRUE(range.error().has_value());
  EXPECT_EQ(first->size(), 3u) << "a batch held across shutdown stays readable";
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

// Every sample id a loop over `range` sees, into `seen`.
std::size_t drain(pipeline::epoch_range range, std::multiset<std::uint64_t>& seen) {
  std::size_t batches = 0;
  for (auto& b : range) {
    seen.insert(b.sample_ids().begin(), b.sample_ids().end());
    ++batches;
  }
  return batches;
}

void expect_every_sample_once(const std::multiset<std::uint64_t>& seen) {
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(images));
  for (std::uint64_t id = 0; id < images; ++id) {
    EXPECT_EQ(seen.count(id), 1u) << "sample " << id;
  }
}

TEST(EmbeddingApiMisuse, BreakingOutOfAnEpochKeepsItsRestForTheNextCall) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  std::vector<std::multiset<std::uint64_t>> seen(2);
  for (auto& b : p->epoch(0, 0)) {
    seen[0].insert(b.sample_ids().begin(), b.sample_ids().end());
    break;  // e.g. a fixed number of steps per epoch
  }
  EXPECT_EQ(seen[0].size(), 3u);
  auto out_of_turn = p->epoch(1, 0);
  EXPECT_EQ(drain(out_of_turn, seen[1]), 0u);
  ASSERT_TRUE(out_of_turn.error().has_value()) << "never an empty epoch without a word";
  EXPECT_EQ(out_of_turn.error()->code(), errc::invalid_argument);
  EXPECT_NE(out_of_turn.error()->message().find("still in epoch 0"), std::string::npos)
      << out_of_turn.error()->message();
  auto rest = p->epoch(0, 0);  // the rest of epoch 0: nothing was dropped
  drain(rest, seen[0]);
  EXPECT_TRUE(rest.complete());
  EXPECT_FALSE(rest.error().has_value());
  drain(p->epoch(1, 0), seen[1]);
  expect_every_sample_once(seen[0]);
  expect_every_sample_once(seen[1]);
  auto report = p->report();
  EXPECT_EQ(report.delivered, 2u * images);
  EXPECT_EQ(report.lost + report.duplicates, 0u);
}

TEST(EmbeddingApiMisuse, AskingForALaterEpochFirstTakesNothing) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  std::vector<std::multiset<std::uint64_t>> seen(2);
  auto early = p->epoch(1, 0);
  EXPECT_TRUE(early.error().has_value()) << "known before the range is iterated";
  EXPECT_EQ(drain(early, seen[1]), 0u);
  ASSERT_TRUE(early.error().has_value());
  auto past = p->epoch(5, 0);
  EXPECT_EQ(drain(past, seen[1]), 0u);
  ASSERT_TRUE(past.error().has_value());
  EXPECT_EQ(past.error()->code(), errc::not_found);
  drain(p->epoch(0, 0), seen[0]);
  auto ended = p->epoch(0, 0);  // epoch 0 is over now
  EXPECT_EQ(drain(ended, seen[0]), 0u);
  ASSERT_TRUE(ended.error().has_value());
  drain(p->epoch(1, 0), seen[1]);
  expect_every_sample_once(seen[0]);
  expect_every_sample_once(seen[1]);
}

TEST(EmbeddingApiMisuse, HoldingEveryBufferGetsAnErrorNotAHang) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));  // prefetch_batches = 1: two buffers
  ASSERT_TRUE(p) << p.error().what();
  std::vector<batch> accumulated;  // gradient accumulation over more batches than buffers
  for (int i = 0; i < 2; ++i) {
    auto b = p->next(0);
    ASSERT_TRUE(b) << b.error().what();
    accumulated.push_back(std::move(*b));
  }
  auto third = p->next(0);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code(), errc::resource_exhausted);
  EXPECT_NE(third.error().message().find("holds all 2 batch buffers"), std::string::npos)
      << third.error().message();
  accumulated.front().release();
  accumulated.front().release();  // idempotent
  auto after = p->next(0);
  ASSERT_TRUE(after) << "one buffer back: batches flow again";
}

TEST(EmbeddingApiMisuse, ANextWaitIsBoundedWhenAnotherGpuIsNotConsumed) {
  temp_dir dir;
  // A window of two batches per GPU, far less than the run: GPU 1's batches fill it.
  auto p = pipeline::open(setup(dir),
                          {"gpus=2", "pipeline.next_timeout_s=0.2", "pipeline.window_samples=12"});
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_DOUBLE_EQ(p->info().next_timeout_s, 0.2);
  // GPU 1's trainer never comes; GPU 0 releases every batch, yet soon waits on GPU 1.
  for (;;) {
    auto b = p->next(0);
    if (!b) {
      EXPECT_EQ(b.error().code(), errc::timed_out) << b.error().what();
      EXPECT_NE(b.error().message().find("one thread per GPU"), std::string::npos);
      break;
    }
    ASSERT_FALSE(b->last_in_epoch() && b->epoch() + 1 == p->epochs())
        << "GPU 0 finished without GPU 1";
  }
}

TEST(EmbeddingApiMisuse, ANextForWaitsOnlyItsOwnWaitAndMayBeRepeated) {
  temp_dir dir;
  // As above, but the next timeout is long: only next_for's own wait bounds the call.
  auto p = pipeline::open(setup(dir),
                          {"gpus=2", "pipeline.next_timeout_s=600", "pipeline.window_samples=12"});
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_FALSE(p->next_for(2, std::chrono::milliseconds(20)))
      << "a GPU that is not one of the pipeline's";
  std::uint64_t taken = 0;
  for (;;) {
    auto b = p->next_for(0, std::chrono::milliseconds(50));
    if (!b) {
      EXPECT_EQ(b.error().code(), errc::timed_out) << b.error().what();
      EXPECT_NE(b.error().message().find("no batch within 0.05"), std::string::npos)
          << b.error().what();
      break;
    }
    ++taken;
  }
  auto again = p->next_for(0, std::chrono::milliseconds(20));
  ASSERT_FALSE(again) << "still waiting on GPU 1";
  EXPECT_EQ(again.error().code(), errc::timed_out);
  // GPU 1's trainer comes: its batches flow, then GPU 0's again.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(p->next_for(1, std::chrono::seconds(60)));
  }
  EXPECT_TRUE(p->next_for(0, std::chrono::seconds(60))) << "after " << taken << " batches";
}

TEST(EmbeddingApiLive, TheReportCountsWhatTheTrainerHasBeenHanded) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir), {"pipeline.window_samples=6"});
  ASSERT_TRUE(p) << p.error().what();
  std::multiset<std::uint64_t> seen;
  drain(p->epoch(0, 0), seen);
  auto mid = p->report();  // epoch 1 cannot have finished: the window is 6 samples
  EXPECT_FALSE(mid.finished);
  EXPECT_GE(mid.delivered, static_cast<std::uint64_t>(images));
  EXPECT_EQ(mid.duplicates, 0u);
  auto first = p->next(0);
  ASSERT_TRUE(first);
  EXPECT_GE(p->report().delivered, images + first->size());
}

// [monitor] metrics in a trainer's own process: the pipeline serves /metrics while it lives,
// counting what the trainer took, and stops serving when it goes; an address taken is an error
// of open(), naming it.
TEST(EmbeddingApiMetrics, TheTopologysMetricsAddressIsServedWhileThePipelineLives) {
  temp_dir dir;
  const auto port = testing::free_tcp_ports(1).at(0);
  const std::string at = "127.0.0.1:" + std::to_string(port);
  httplib::Client client("127.0.0.1", port);
  {
    auto p = pipeline::open(setup(dir), {"monitor.metrics=" + at});
    ASSERT_TRUE(p) << p.error().what();
    EXPECT_EQ(p->info().metrics_port, port);
    std::uint64_t taken = 0;
    for (auto& b : p->epoch(0, 0)) {
      taken += b.size();
    }
    EXPECT_EQ(taken, static_cast<std::uint64_t>(images));
    auto r = client.Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("\nconveyor_samples_delivered_total "), std::string::npos) << r->body;
    auto second = pipeline::open(setup(dir), {"monitor.metrics=" + at});
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code(), errc::invalid_config);
    EXPECT_NE(second.error().message().find("monitor.metrics: cannot listen at " + at),
              std::string::npos)
        << second.error().message();
  }
  EXPECT_FALSE(client.Get("/metrics"));  // gone with the pipeline
}

TEST(EmbeddingApiMetrics, PortZeroIsOneTheSystemPicksAndInfoSaysWhich) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir), {"monitor.metrics=127.0.0.1:0"});
  ASSERT_TRUE(p) << p.error().what();
  const auto port = p->info().metrics_port;
  ASSERT_NE(port, 0);
  auto r = httplib::Client("127.0.0.1", port).Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("\nconveyor_samples_delivered_total "), std::string::npos) << r->body;
  auto plain = pipeline::open(setup(dir));
  ASSERT_TRUE(plain) << plain.error().what();
  EXPECT_EQ(plain->info().metrics_port, 0);
}

TEST(EmbeddingApiLifetime, AnIteratorOutlivesTheRangeExpressionItCameFrom) {
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  auto it = p->epoch(0, 0).begin();  // the range is a temporary, gone after this line
  ASSERT_NE(it, pipeline::epoch_range::iterator{});
  EXPECT_EQ(it->size(), 3u);
  ++it;
  EXPECT_EQ(it->epoch(), 0u);
  auto moved = std::move(*p);  // a range of a moved pipeline goes on
  std::multiset<std::uint64_t> seen;
  drain(moved.epoch(0, 0), seen);
  EXPECT_EQ(seen.size() + 6, static_cast<std::size_t>(images))
      << "two batches were taken (the iterator still holds the second)";
}

TEST(EmbeddingApiTypes, TheTensorIsWritableAndItsDtypeMapsToDlpack) {
  static_assert(std::is_same_v<decltype(tensor_view::data), void*>, "zero-copy needs no cast");
  static_assert(to_dlpack(dtype::float32).code == 2 && to_dlpack(dtype::float32).bits == 32);
  static_assert(to_dlpack(dtype::bfloat16).code == 4 && to_dlpack(dtype::uint8).code == 1);
  temp_dir dir;
  auto p = pipeline::open(setup(dir));
  ASSERT_TRUE(p) << p.error().what();
  auto info = p->info();
  EXPECT_EQ(info.class_names, (std::vector<std::string>{"c0", "c1", "c2"}));
  EXPECT_EQ(info.classes(), 3u);
  auto b = p->next(0);
  ASSERT_TRUE(b);
  auto t = b->tensor();
  ASSERT_EQ(t.elements(), b->size() * 3 * 16 * 12);
  static_cast<std::uint8_t*>(t.data)[0] = 7;  // in-place work on the trainer's buffer
  EXPECT_EQ(static_cast<const std::uint8_t*>(b->tensor().data)[0], 7);
}

// Captures Conveyor's log lines through the public sink; restores stderr after.
class captured_log {
 public:
  captured_log() {
    set_log_sink([this](log_level level, std::string_view component, std::string_view text) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(std::string(component) + "|" + std::to_string(static_cast<int>(level)) +
                       "|" + std::string(text));
    });
  }
  ~captured_log() { set_log_sink(nullptr); }
  bool contains(const std::string& text) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& l : lines_) {
      if (l.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(EmbeddingApiLogging, LinesGoToTheTrainersSinkAndSpdlogIsLeftAlone) {
  spdlog::set_level(spdlog::level::warn);  // the trainer's own setting
  temp_dir dir;
  captured_log lines;
  {
    auto p = pipeline::open(setup(dir));
    ASSERT_TRUE(p) << p.error().what();
    drain(p->epoch(1, 0), *std::make_unique<std::multiset<std::uint64_t>>());
  }
  EXPECT_TRUE(lines.contains("pipeline|4|epoch 1 of gpu 0: invalid_argument: gpu 0 is still in"));
  set_log_level(log_level::off);
  EXPECT_EQ(get_log_level(), log_level::off);
  {
    auto p = pipeline::open(setup(dir));
    ASSERT_TRUE(p);
    drain(p->epoch(3, 0), *std::make_unique<std::multiset<std::uint64_t>>());
  }
  EXPECT_FALSE(lines.contains("epoch(3, 0)")) << "level off: nothing logged";
  set_log_level(log_level::info);
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn) << "the trainer's spdlog level is its own";
  EXPECT_EQ(spdlog::get("pipeline"), nullptr) << "nothing in spdlog's registry";
}

TEST(EmbeddingApiSideEffects, OpenCvThreadsComeBackWhenThePipelineGoes) {
  cv::setNumThreads(3);
  temp_dir dir;
  {
    auto p = pipeline::open(setup(dir));
    ASSERT_TRUE(p) << p.error().what();
    // Off now (cv::setNumThreads(0): Debian's TBB backend still reports its arena's size).
    cv::setNumThreads(5);  // a trainer changing it meanwhile is its own business
  }
  EXPECT_EQ(cv::getNumThreads(), 3) << "the setting from before the pipeline is back";
}

}  // namespace
}  // namespace conveyor

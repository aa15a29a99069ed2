// Supervision's logic without actors: restart intensity and backoff on an injected clock,
// fault draws, the batcher core's retries and re-issues when workers die (with zombies whose
// late results must be ignored), and the quarantine report file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/batching/batcher_core.hpp"
#include "core/batching/quarantine_report.hpp"
#include "core/supervision/fault_injector.hpp"
#include "core/supervision/restart_budget.hpp"
#include "support/batcher_world.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using time_point = restart_budget::time_point;

restart_settings settings(int max_restarts, std::uint64_t seed = 1) {
  return {max_restarts, 10000ms, 10ms, 1000ms, seed};
}

TEST(RestartBudget, EscalatesPastMaxRestartsWithinThePeriod) {
  restart_budget budget(settings(3));
  time_point t0{};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(budget.on_failure(t0 + i * 1s, 0)) << i;
  }
  EXPECT_FALSE(budget.on_failure(t0 + 3s, 0));  // the fourth within 10 s, progress or not
  // Once the first restarts leave the period, restarts are allowed again.
  EXPECT_TRUE(budget.on_failure(t0 + 10500ms, 1));
  EXPECT_EQ(budget.recent(t0 + 10500ms), 3);
}

TEST(RestartBudget, ZeroRestartsEscalatesAtOnce) {
  restart_budget budget(settings(0));
  EXPECT_FALSE(budget.on_failure(time_point{}, 0));
}

// A worker that completed samples since its last start failed because of one sample: it is
// restarted at once, however many restarts came before.
TEST(RestartBudget, AFailureAfterProgressRestartsWithoutBackoff) {
  restart_budget budget(settings(100));
  time_point t0{};
  for (int i = 0; i < 50; ++i) {
    auto d = budget.on_failure(t0 + i * 1ms, 0);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->count(), 0) << i;
  }
  // The first failure without progress backs off from the minimum, not from the 51st restart.
  auto d = budget.on_failure(t0 + 50ms, 1);
  ASSERT_TRUE(d);
  EXPECT_GE(d->count(), 5);
  EXPECT_LE(d->count(), 10);
}

TEST(RestartBudget, BackoffDoublesWithEveryFailureWithoutProgressUpToTheMaximum) {
  restart_budget budget(settings(100));
  time_point t0{};
  std::int64_t base = 10;
  for (int i = 0; i < 10; ++i) {
    auto d = budget.on_failure(t0 + i * 1ms, static_cast<std::size_t>(i + 1));
    ASSERT_TRUE(d);
    auto expected = std::min<std::int64_t>(base, 1000);
    EXPECT_GE(d->count(), expected / 2) << i;
    EXPECT_LE(d->count(), expected) << i;
    base *= 2;
  }
}

TEST(RestartBudget, JitterDependsOnTheSeedOnly) {
  restart_budget a(settings(100, 7));
  restart_budget b(settings(100, 7));
  restart_budget c(settings(100, 8));
  bool differs = false;
  for (int i = 0; i < 8; ++i) {
    auto t = time_point{} + i * 1ms;
    auto streak = static_cast<std::size_t>(i + 1);
    auto da = a.on_failure(t, streak);
    EXPECT_EQ(da, b.on_failure(t, streak));
    differs = differs || da != c.on_failure(t, streak);
  }
  EXPECT_TRUE(differs);
}

sample_ticket ticket(std::uint64_t id, std::uint32_t retry = 0) {
  return {0, id, id, 99, id + 1, retry};
}

TEST(FaultInjector, DrawsAtTheConfiguredRateAndReproducibly) {
  fault_plan plan;
  plan.read_error = 0.1;
  plan.crash_preprocessor = 0.01;
  plan.seed = 5;
  fault_injector faults(plan);
  int reads = 0;
  int crashes = 0;
  for (std::uint64_t id = 0; id < 20000; ++id) {
    reads += faults.read_fails(ticket(id)) ? 1 : 0;
    try {
      faults.maybe_crash(worker_role::preprocessor, ticket(id));
    } catch (const injected_crash& e) {
      ++crashes;
      EXPECT_NE(std::string(e.what()).find("crash_preprocessor"), std::string::npos);
    }
  }
  EXPECT_NEAR(reads, 2000, 200);
  EXPECT_NEAR(crashes, 200, 60);
  // The same attempt draws the same; a retry draws anew.
  int same = 0;
  int retried_too = 0;
  for (std::uint64_t id = 0; id < 2000; ++id) {
    same += faults.read_fails(ticket(id)) == faults.read_fails(ticket(id)) ? 1 : 0;
    retried_too += faults.read_fails(ticket(id)) && faults.read_fails(ticket(id, 1)) ? 1 : 0;
  }
  EXPECT_EQ(same, 2000);
  EXPECT_LT(retried_too, 50);  // ~2000 * 0.1 * 0.1 = 20
  // No probability, no fault, whatever the role.
  EXPECT_NO_THROW(faults.maybe_crash(worker_role::reader, ticket(1)));
  EXPECT_FALSE(fault_plan{}.enabled());
}

// A core with one reader and `workers` preprocessors up, one GPU with plenty of credit.
batcher_core make_core(int workers, std::uint32_t retries, std::uint64_t samples = 4) {
  batcher_settings s;
  s.dataset_size = samples;
  s.order = sample_order::shuffled(false);
  s.batch_size = 1;
  s.workers = workers;
  s.window_samples = 8;
  s.max_sample_retries = retries;
  batcher_core core(s, make_batch_policy(batching_policy::in_order, {1, 1}),
                    [](std::uint64_t id) { return "img_" + std::to_string(id); });
  core.on_credit(0, 100);
  core.on_worker_up(worker_role::reader, 0);
  for (int w = 0; w < workers; ++w) {
    core.on_worker_up(worker_role::preprocessor, w);
  }
  return core;
}

prepared_ptr prepared(const sample_ticket& t) {
  return testing::prepared_for(t);
}

TEST(BatcherCoreRetries, AFailingSampleIsRetriedThenQuarantinedOnce) {
  auto core = make_core(1, 2, 1);
  for (std::uint32_t attempt = 0; attempt < 3; ++attempt) {
    auto d = core.take_dispatches();
    ASSERT_EQ(d.size(), 1u) << attempt;
    EXPECT_EQ(d[0].ticket.retry, attempt);
    auto outcome = core.on_failed(d[0].ticket, "decode_error: truncated");
    EXPECT_EQ(outcome, attempt < 2 ? failure_outcome::retried : failure_outcome::quarantined);
  }
  EXPECT_TRUE(core.take_dispatches().empty());
  ASSERT_EQ(core.ledger().quarantined().size(), 1u);
  const auto& q = core.ledger().quarantined()[0];
  EXPECT_EQ(q.key, "img_0");
  EXPECT_NE(q.reason.find("truncated (failed 3 times)"), std::string::npos) << q.reason;
  EXPECT_EQ(core.retries(), 2u);
  EXPECT_EQ(core.in_flight(), 0u);
}

TEST(BatcherCoreRetries, ASampleThatSucceedsOnRetryIsDeliveredOnce) {
  auto core = make_core(1, 2, 1);
  auto first = core.take_dispatches().at(0);
  EXPECT_EQ(core.on_failed(first.ticket, "read error"), failure_outcome::retried);
  auto second = core.take_dispatches().at(0);
  EXPECT_NE(second.ticket.attempt, first.ticket.attempt);
  EXPECT_TRUE(core.on_prepared(prepared(second.ticket)));
  // The first attempt's late success is stale: ignored.
  EXPECT_FALSE(core.on_prepared(prepared(first.ticket)));
  EXPECT_EQ(core.on_failed(first.ticket, "late"), failure_outcome::stale);
  auto batches = core.take_batches();
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(core.ledger().totals().delivered, 1u);
  EXPECT_EQ(core.ledger().totals().duplicates, 0u);
  EXPECT_EQ(core.stale_results(), 2u);
}

TEST(BatcherCoreRetries, ADeadWorkersSamplesGoToTheOthersAndItsCulpritIsCharged) {
  auto core = make_core(2, 0, 4);
  auto d = core.take_dispatches();
  ASSERT_EQ(d.size(), 4u);  // two per preprocessor
  std::vector<dispatch_order> of_w0;
  for (const auto& o : d) {
    if (o.worker == 0) {
      of_w0.push_back(o);
    }
  }
  ASSERT_EQ(of_w0.size(), 2u);
  auto held = core.on_worker_down(worker_role::preprocessor, 0, of_w0[0].ticket.attempt,
                                  "preprocessor-0 crashed");
  EXPECT_EQ(held, 2u);
  // The culprit is out of retries (0): quarantined with the crash as reason and its name.
  ASSERT_EQ(core.ledger().quarantined().size(), 1u);
  EXPECT_EQ(core.ledger().quarantined()[0].key, "img_" + std::to_string(of_w0[0].ticket.sample_id));
  EXPECT_NE(core.ledger().quarantined()[0].reason.find("crashed"), std::string::npos);
  // The other is issued again, but not to the dead worker, which gets nothing until it is up.
  auto again = core.take_dispatches();
  for (const auto& o : again) {
    EXPECT_NE(o.worker, 0);
  }
  core.on_worker_up(worker_role::preprocessor, 0);
  auto later = core.take_dispatches();
  bool reissued = false;
  for (const auto& o : again) {
    reissued = reissued || o.ticket.sample_id == of_w0[1].ticket.sample_id;
  }
  for (const auto& o : later) {
    reissued = reissued || o.ticket.sample_id == of_w0[1].ticket.sample_id;
  }
  EXPECT_TRUE(reissued);
  // The zombie's late result for its old attempt changes nothing.
  EXPECT_FALSE(core.on_prepared(prepared(of_w0[1].ticket)));
}

// A reader passes its attempts on in dispatch order: those up to the last it completed are at
// their preprocessors, and only the rest (still in its mailbox when it died) is issued again.
TEST(BatcherCoreRetries, AReadersDeathReissuesOnlyWhatItHadNotPassedOn) {
  auto core = make_core(2, 0, 4);
  auto d = core.take_dispatches();
  ASSERT_EQ(d.size(), 4u);
  auto held = core.on_worker_down(worker_role::reader, 0, d[2].ticket.attempt, "reader-0 crashed",
                                  d[1].ticket.attempt);
  EXPECT_EQ(held, 2u);  // the culprit and the one behind it
  EXPECT_EQ(core.retries(), 1u);
  EXPECT_EQ(core.ledger().quarantined().size(), 1u);  // the culprit: no retries configured
  // What was passed on is still live: its results count.
  EXPECT_TRUE(core.on_prepared(prepared(d[0].ticket)));
  EXPECT_TRUE(core.on_prepared(prepared(d[1].ticket)));
  EXPECT_FALSE(core.on_prepared(prepared(d[3].ticket)));  // given up on: issued again
  EXPECT_EQ(core.stale_results(), 1u);
}

TEST(BatcherCoreRetries, NothingIsDispatchedWithoutAReader) {
  auto core = make_core(2, 2, 4);
  core.on_worker_down(worker_role::reader, 0, 0, "reader-0 crashed");
  // Everything the reader had is waiting; nothing can go out.
  EXPECT_TRUE(core.take_dispatches().empty());
  core.on_worker_up(worker_role::reader, 0);
  EXPECT_FALSE(core.take_dispatches().empty());
}

class WorkerDeaths : public ::testing::TestWithParam<int> {};

// Preprocessors die again and again mid-epoch; half of their attempts still report late.
TEST_P(WorkerDeaths, EverySampleIsDeliveredExactlyOnce) {
  testing::world_params p;
  p.gpus = GetParam();
  p.kill_every = 7;
  p.max_sample_retries = 1000;  // a culprit is charged, but these deaths are not its fault
  for (auto policy : {batching_policy::in_order, batching_policy::latency_aware}) {
    for (std::uint64_t seed = 0; seed < 10; ++seed) {
      auto r = testing::batcher_world(p, policy, seed).run();
      epoch_ledger seen(p.samples);
      for (const auto& b : r.batches) {
        for (const auto& s : b.samples) {
          seen.deliver(b.epoch, s->ticket.sample_id);
        }
      }
      auto t = seen.totals();
      EXPECT_EQ(t.delivered, p.samples * p.epochs) << "seed " << seed;
      EXPECT_EQ(t.duplicates, 0u) << "seed " << seed;
      EXPECT_EQ(r.totals.lost + r.totals.quarantined, 0u);
      EXPECT_GT(r.kills, 10u);
      EXPECT_GT(r.stale, 0u);
      EXPECT_LE(r.peak_in_flight, r.window);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, WorkerDeaths, ::testing::Values(1, 3));

TEST(QuarantineReport, WritesOneLinePerSampleAsItHappens) {
  testing::temp_dir dir;
  auto report = quarantine_report::open((dir / "q.tsv").string());
  ASSERT_TRUE(report) << report.error().what();
  (*report)->append({1, 42, "shard-00000.cvs record 42", "decode_error:\tbad\nmarker"});
  // Flushed at once: readable while the report is still open.
  std::ifstream in(dir / "q.tsv");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "epoch\tsample\tkey\treason\n1\t42\tshard-00000.cvs record 42\tdecode_error: bad "
            "marker\n");
}

TEST(QuarantineReport, AnUnwritablePathIsAnErrorNamingIt) {
  auto report = quarantine_report::open("/nonexistent-dir/q.tsv");
  ASSERT_FALSE(report);
  EXPECT_NE(std::string(report.error().what()).find("/nonexistent-dir/q.tsv"), std::string::npos);
}

}  // namespace
}  // namespace conveyor

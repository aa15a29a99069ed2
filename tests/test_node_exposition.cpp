// /metrics' text (core/observe/node_exposition.hpp) from made-up figures: the role gauges of
// the actors' reports, their histograms (cumulative, the +Inf bucket the count), and an object
// store's traffic, named and labelled as Prometheus wants.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/metrics/latency_histogram.hpp"
#include "core/observe/node_exposition.hpp"

namespace conveyor {
namespace {

std::shared_ptr<pipeline_status> two_gpus() {
  return std::make_shared<pipeline_status>(std::vector<std::shared_ptr<batch_channel>>{
      std::make_shared<batch_channel>(2), std::make_shared<batch_channel>(2)});
}

actor_report feeder(const std::string& name, std::int64_t free_slots) {
  actor_report r;
  r.name = name;
  r.gauges = {{"free_slots", free_slots}, {"ready_batches", 1}};
  latency_histogram h;
  h.record(200'000);         // <= 250 us
  h.record(3'000'000);       // <= 5 ms
  h.record(20'000'000'000);  // above every bound
  r.latency_counts.assign(h.counts().begin(), h.counts().end());
  r.latency_sum_ns = h.sum_ns();
  return r;
}

bool has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(NodeExposition, RoleGaugesAreOneFamilyPerRoleAndName) {
  const auto text = render_metrics(*two_gpus(), 2, {feeder("feeder-0", 3), feeder("feeder-1", 0)});
  EXPECT_TRUE(has(text, "# TYPE conveyor_feeder_free_slots gauge")) << text;
  EXPECT_TRUE(has(text, "conveyor_feeder_free_slots{actor=\"feeder-0\"} 3")) << text;
  EXPECT_TRUE(has(text, "conveyor_feeder_free_slots{actor=\"feeder-1\"} 0")) << text;
  EXPECT_TRUE(has(text, "conveyor_feeder_ready_batches{actor=\"feeder-1\"} 1")) << text;
  // Declared once, whatever the number of feeders.
  EXPECT_EQ(text.find("# TYPE conveyor_feeder_free_slots"),
            text.rfind("# TYPE conveyor_feeder_free_slots"));
}

TEST(NodeExposition, ARolesNameIsMadeAMetricsWord) {
  actor_report worker;
  worker.name = "python-worker-3";
  worker.gauges = {{"samples_in_flight", 1}};
  const auto text = render_metrics(*two_gpus(), 2, {worker});
  EXPECT_TRUE(has(text, "conveyor_python_worker_samples_in_flight{actor=\"python-worker-3\"} 1"))
      << text;
}

TEST(NodeExposition, TheHistogramIsCumulativeAndItsInfBucketTheCount) {
  const auto text = render_metrics(*two_gpus(), 2, {feeder("feeder-0", 3)});
  EXPECT_TRUE(
      has(text, "conveyor_actor_item_duration_seconds_bucket{actor=\"feeder-0\",le=\"0.0001\"} 0"))
      << text;
  EXPECT_TRUE(
      has(text, "conveyor_actor_item_duration_seconds_bucket{actor=\"feeder-0\",le=\"0.00025\"} 1"))
      << text;
  EXPECT_TRUE(
      has(text, "conveyor_actor_item_duration_seconds_bucket{actor=\"feeder-0\",le=\"10\"} 2"))
      << text;
  EXPECT_TRUE(
      has(text, "conveyor_actor_item_duration_seconds_bucket{actor=\"feeder-0\",le=\"+Inf\"} 3"))
      << text;
  EXPECT_TRUE(has(text, "conveyor_actor_item_duration_seconds_count{actor=\"feeder-0\"} 3"))
      << text;
  EXPECT_TRUE(has(text, "conveyor_trainer_wait_seconds_total{gpu=\"1\"} 0")) << text;
}

TEST(NodeExposition, AnObjectStoresTrafficOnlyWhenThereIsOne) {
  const auto status = two_gpus();
  EXPECT_EQ(render_metrics(*status, 2, {}).find("conveyor_s3_"), std::string::npos);
  transfer_counters s3;
  s3.attempt(s3_failure::none, 1000, 200);
  s3.attempt(s3_failure::throttled, 0, 200);
  s3.retry();
  const auto text = render_metrics(*status, 2, {}, {&s3});
  EXPECT_TRUE(has(text, "conveyor_s3_requests_total 2")) << text;
  EXPECT_TRUE(has(text, "conveyor_s3_retries_total 1")) << text;
  EXPECT_TRUE(has(text, "conveyor_s3_failures_total{reason=\"" +
                            std::string(to_string(s3_failure::throttled)) + "\"} 1"))
      << text;
  EXPECT_TRUE(has(text, "conveyor_s3_bytes_total{direction=\"in\"} 1000")) << text;
  EXPECT_TRUE(has(text, "conveyor_s3_bytes_total{direction=\"out\"} 400")) << text;
}

TEST(NodeExposition, AServedNodesTrainerProcessesWaitEachTheirOwn) {
  const auto status = two_gpus();
  EXPECT_EQ(render_metrics(*status, 2, {}).find("conveyor_client_wait"), std::string::npos);
  client_waits waits(2, 2);
  waits.add(1, 0, 1'500'000'000);
  waits.add(1, 0, 500'000'000);  // a second client of the same (job, rank) adds to the first's
  waits.add(0, 1, 250'000'000);
  const auto text = render_metrics(*status, 2, {}, {nullptr, &waits});
  EXPECT_TRUE(has(text, "conveyor_client_wait_seconds_total{job=\"1\",rank=\"0\"} 2")) << text;
  EXPECT_TRUE(has(text, "conveyor_client_wait_seconds_total{job=\"0\",rank=\"1\"} 0.25")) << text;
  EXPECT_TRUE(has(text, "conveyor_client_wait_seconds_total{job=\"1\",rank=\"1\"} 0")) << text;
}

TEST(NodeExposition, EachPoolsBusyShareIsTheLastIntervals) {
  const auto status = two_gpus();
  EXPECT_TRUE(
      has(render_metrics(*status, 2, {}), "conveyor_pool_busy_ratio{pool=\"preprocessor\"} 0"));
  analysis::interval_figures f;
  f.seconds = 2;
  f.prep_busy_s = 6;  // 4 preprocessors busy 75% of 2 s
  f.prep_workers = 4;
  f.read_busy_s = 1;  // 2 readers busy 25%
  f.readers = 2;
  status->note_diagnosis(f, "now prep-bound: ...");
  f.prep_busy_s = 8;  // a later interval replaces it
  status->note_diagnosis(f, "now prep-bound: ...");
  const auto text = render_metrics(*status, 2, {});
  EXPECT_TRUE(has(text, "conveyor_pool_busy_ratio{pool=\"preprocessor\"} 1")) << text;
  EXPECT_TRUE(has(text, "conveyor_pool_busy_ratio{pool=\"reader\"} 0.25")) << text;
  EXPECT_TRUE(has(text, "conveyor_pool_workers{pool=\"preprocessor\"} 4")) << text;
  EXPECT_TRUE(has(text, "conveyor_pool_workers{pool=\"reader\"} 2")) << text;
}

}  // namespace
}  // namespace conveyor

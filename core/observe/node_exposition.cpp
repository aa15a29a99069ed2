#include "core/observe/node_exposition.hpp"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <deque>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <numeric>
#include <utility>

#include "core/analysis/live_diagnosis.hpp"
#include "core/analysis/stall_model.hpp"
#include "core/base/monotonic_clock.hpp"
#include "core/metrics/cpu_usage.hpp"
#include "core/metrics/latency_histogram.hpp"
#include "core/observe/live_reports.hpp"
#include "core/remote/s3_request.hpp"

namespace conveyor {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using labels = std::vector<ClientMetric::Label>;

// The families of one exposition, in the order they are opened. A family opened stays where it
// is (a deque) while more are opened.
class families {
 public:
  // A new family; `add` fills it.
  MetricFamily& open(std::string name, std::string help, MetricType type) {
    out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return out_.back();
  }
  // A family of one unlabelled value.
  void one(std::string name, std::string help, MetricType type, double value) {
    add(open(std::move(name), std::move(help), type), value);
  }
  static void add(MetricFamily& f, double value, labels l = {}) {
    ClientMetric m;
    m.label = std::move(l);
    (f.type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
    f.metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
  }

 private:
  std::deque<MetricFamily> out_;
};

// One unlabelled value of a family of its own.
struct lone_value {
  const char* name;
  const char* help;
  MetricType type;
  double value;
};

void add_values(families& out, std::initializer_list<lone_value> values) {
  for (const auto& v : values) {
    out.one(v.name, v.help, v.type, v.value);
  }
}

double seconds(std::int64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

ClientMetric histogram_of(const actor_report& r) {
  ClientMetric m;
  m.label = {{"actor", r.name}};
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < latency_histogram::bounds_ns.size(); ++i) {
    cumulative += r.latency_counts[i];
    m.histogram.bucket.push_back({cumulative, seconds(latency_histogram::bounds_ns[i])});
  }
  m.histogram.sample_count = cumulative + r.latency_counts.back();  // the +Inf bucket
  m.histogram.sample_sum = seconds(r.latency_sum_ns);
  return m;
}

// `word` as a part of a metric's name: what is not a letter, digit or '_' becomes '_'
// ("python-worker" -> "python_worker").
std::string metric_word(std::string word) {
  for (auto& c : word) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      c = '_';
    }
  }
  return word;
}

// The actors' role figures: conveyor_<role>_<name>{actor=...}, one family per role and name.
void add_role_gauges(families& out, const std::vector<actor_report>& reports) {
  std::map<std::string, MetricFamily*> opened;
  for (const auto& r : reports) {
    const auto role = actor_role(r.name);
    for (const auto& g : r.gauges) {
      const auto name = "conveyor_" + metric_word(role) + "_" + metric_word(g.name);
      auto& f = opened[name];
      if (f == nullptr) {
        f = &out.open(name, "The " + role + "'s " + g.name + ".", MetricType::Gauge);
      }
      families::add(*f, static_cast<double>(g.value), {{"actor", r.name}});
    }
  }
}

void add_actors(families& out, const std::vector<actor_report>& reports) {
  auto& mailbox = out.open("conveyor_actor_mailbox_messages",
                           "Messages waiting in the actor's mailbox.", MetricType::Gauge);
  auto& items =
      out.open("conveyor_actor_items_total", "Items the actor handled.", MetricType::Counter);
  auto& rate =
      out.open("conveyor_actor_items_per_second",
               "Items the actor handled per second, over the last seconds.", MetricType::Gauge);
  auto& recent = out.open("conveyor_actor_recent_item_duration_seconds",
                          "Percentiles of the time of the actor's last items.", MetricType::Gauge);
  auto& histogram =
      out.open("conveyor_actor_item_duration_seconds",
               "Time the actor's items took, since it started.", MetricType::Histogram);
  for (const auto& r : reports) {
    const labels actor{{"actor", r.name}};
    families::add(mailbox, static_cast<double>(r.mailbox), actor);
    families::add(items, static_cast<double>(r.items), actor);
    families::add(rate, static_cast<double>(r.items_per_s), actor);
    const std::pair<const char*, std::int64_t> percentiles[] = {
        {"50", r.p50_us}, {"90", r.p90_us}, {"99", r.p99_us}};
    for (const auto& [p, us] : percentiles) {
      families::add(recent, static_cast<double>(us) / 1e6, {{"actor", r.name}, {"percentile", p}});
    }
    if (r.latency_counts.size() == latency_histogram::buckets) {
      histogram.metric.push_back(histogram_of(r));
    }
  }
}

void add_samples(families& out, const pipeline_status& status) {
  const auto f = status.figures();
  add_values(
      out,
      {
          {"conveyor_samples_delivered_total", "Distinct samples delivered in batches.",
           MetricType::Counter, static_cast<double>(f.totals.delivered)},
          {"conveyor_samples_quarantined_total", "Distinct samples quarantined (not delivered).",
           MetricType::Counter, static_cast<double>(f.totals.quarantined)},
          {"conveyor_samples_filtered_total", "Distinct samples the recipe's filter left out.",
           MetricType::Counter, static_cast<double>(f.totals.filtered)},
          {"conveyor_samples_prepared_total", "Samples whose transform steps are done.",
           MetricType::Counter, static_cast<double>(status.prepared_now())},
          {"conveyor_sample_retries_total", "Samples issued again after a failure or a death.",
           MetricType::Counter, static_cast<double>(f.retries)},
          {"conveyor_sample_handoffs_total", "Samples handed from a preprocessor to a straggler.",
           MetricType::Counter, static_cast<double>(f.handoffs)},
          {"conveyor_samples_in_flight", "Samples dispatched and not yet in a batch.",
           MetricType::Gauge, static_cast<double>(f.in_flight)},
          {"conveyor_samples_in_flight_peak", "The most samples in flight at once so far.",
           MetricType::Gauge, static_cast<double>(f.peak_in_flight)},
          {"conveyor_latency_budget_seconds",
           "The per-sample latency budget past which a sample is handed off (0: none).",
           MetricType::Gauge, seconds(f.budget_ns)},
          {"conveyor_transform_seconds_total", "Time spent in transform steps, over samples.",
           MetricType::Counter,
           seconds(std::accumulate(f.step_ns.begin(), f.step_ns.end(), std::int64_t{0}))},
          {"conveyor_read_seconds_total", "Time spent reading samples, over samples.",
           MetricType::Counter, seconds(status.read_ns())},
          {"conveyor_window_full_seconds_total", "Time every credit of the window was held.",
           MetricType::Counter,
           seconds(static_cast<std::int64_t>(status.window().full_until(monotonic_ns())))},
          {"conveyor_worker_restarts_total", "Workers a supervisor restarted.", MetricType::Counter,
           static_cast<double>(status.restarts())},
          {"conveyor_worker_hangs_total", "Workers a supervisor declared hung.",
           MetricType::Counter, static_cast<double>(status.hangs())},
      });
}

void add_trainers(families& out, const pipeline_status& status, int gpus) {
  auto& wait = out.open("conveyor_trainer_wait_seconds_total",
                        "Time the trainer of a GPU (rank) waited for a batch: its stall.",
                        MetricType::Counter);
  for (int g = 0; g < gpus; ++g) {
    families::add(wait, std::chrono::duration<double>(status.channel(g)->waited()).count(),
                  {{"gpu", std::to_string(g)}});
  }
  auto& bound = out.open("conveyor_bottleneck_seconds_total",
                         "Time the live diagnosis put in each class (what held the node back).",
                         MetricType::Counter);
  const auto tally = status.bottlenecks();
  const auto shares = tally.shares();
  for (std::size_t i = 0; i < analysis::all_bottlenecks.size(); ++i) {
    families::add(bound, shares[i] * tally.total_s(),
                  {{"class", std::string(analysis::to_string(analysis::all_bottlenecks[i]))}});
  }
}

// Each pool's work over the live diagnosis's last interval (zeros before its first).
void add_pools(families& out, const pipeline_status& status) {
  const auto f = status.last_interval().value_or(analysis::interval_figures{});
  const bool measured = f.seconds > 0;
  auto& busy = out.open("conveyor_pool_busy_ratio",
                        "Share of the pool's time its workers spent working, over the live "
                        "diagnosis's last interval (stragglers' work counts with the "
                        "preprocessors', so it can pass 1).",
                        MetricType::Gauge);
  families::add(busy, measured ? f.prep_share() : 0, {{"pool", "preprocessor"}});
  families::add(busy, measured ? f.read_share() : 0, {{"pool", "reader"}});
  auto& workers = out.open("conveyor_pool_workers",
                           "Workers of the pool at work in that interval (autotune changes them).",
                           MetricType::Gauge);
  families::add(workers, measured ? f.prep_workers : 0, {{"pool", "preprocessor"}});
  families::add(workers, measured ? f.readers : 0, {{"pool", "reader"}});
}

// A served node's trainer processes, each (job, rank) its own.
void add_clients(families& out, const client_waits& clients) {
  auto& wait = out.open("conveyor_client_wait_seconds_total",
                        "Time the trainer process of a job's rank waited for a batch (its stall), "
                        "as its client said with its last release.",
                        MetricType::Counter);
  for (const auto& c : clients.snapshot()) {
    families::add(wait, c.seconds,
                  {{"job", std::to_string(c.job)}, {"rank", std::to_string(c.rank)}});
  }
}

void add_reads(families& out, const pipeline_status& status) {
  const auto r = status.reads().totals();
  auto& reads = out.open("conveyor_reads_total", "Samples read, by where they came from.",
                         MetricType::Counter);
  families::add(reads, static_cast<double>(r.cache_hits), {{"source", "cache"}});
  families::add(reads, static_cast<double>(r.storage_reads), {{"source", "storage"}});
  families::add(reads, static_cast<double>(r.peer_fetches), {{"source", "peer"}});
  auto& bytes = out.open("conveyor_read_bytes_total", "Bytes read, by where they came from.",
                         MetricType::Counter);
  families::add(bytes, static_cast<double>(r.storage_bytes), {{"source", "storage"}});
  families::add(bytes, static_cast<double>(r.peer_bytes), {{"source", "peer"}});
  add_values(
      out, {
               {"conveyor_cache_disk_hits_total", "Cache hits served by the disk tier.",
                MetricType::Counter, static_cast<double>(r.disk_hits)},
               {"conveyor_peer_fallbacks_total", "Samples a peer holds, read from storage instead.",
                MetricType::Counter, static_cast<double>(r.peer_fallbacks)},
               {"conveyor_peer_served_total", "Samples this node served to its peers.",
                MetricType::Counter, static_cast<double>(r.peer_served)},
           });
}

void add_object_store(families& out, const transfer_counters& s3) {
  const auto t = s3.snapshot();
  add_values(out,
             {
                 {"conveyor_s3_requests_total", "Requests to the object store, retries included.",
                  MetricType::Counter, static_cast<double>(t.requests)},
                 {"conveyor_s3_retries_total", "Requests to the object store made again.",
                  MetricType::Counter, static_cast<double>(t.retries)},
             });
  auto& failures =
      out.open("conveyor_s3_failures_total", "Attempts at the object store that failed, by why.",
               MetricType::Counter);
  for (std::size_t f = 1; f < t.by_failure.size(); ++f) {
    families::add(failures, static_cast<double>(t.by_failure[f]),
                  {{"reason", to_string(static_cast<s3_failure>(f))}});
  }
  auto& bytes = out.open("conveyor_s3_bytes_total", "Bytes to and from the object store.",
                         MetricType::Counter);
  families::add(bytes, static_cast<double>(t.bytes_in), {{"direction", "in"}});
  families::add(bytes, static_cast<double>(t.bytes_out), {{"direction", "out"}});
}

// Resident memory from /proc/self/statm (its second field, in pages); 0 where unreadable.
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(statm >> size >> resident)) {
    return 0;
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

void add_process(families& out) {
  out.one("process_resident_memory_bytes", "Resident memory of this process.", MetricType::Gauge,
          resident_bytes());
  const auto cpu = read_cpu_times();
  out.one("process_cpu_seconds_total", "User and system CPU time of this process.",
          MetricType::Counter, cpu ? cpu->process_s : 0);
}

}  // namespace

std::string render_metrics(const pipeline_status& status, int gpus,
                           const std::vector<actor_report>& reports,
                           const exposition_extras& extras) {
  families out;
  add_actors(out, reports);
  add_role_gauges(out, reports);
  add_samples(out, status);
  add_trainers(out, status, gpus);
  if (extras.clients != nullptr) {
    add_clients(out, *extras.clients);
  }
  add_pools(out, status);
  add_reads(out, status);
  if (extras.s3 != nullptr) {
    add_object_store(out, *extras.s3);
  }
  add_process(out);
  return prometheus::TextSerializer().Serialize(out.take());
}

}  // namespace conveyor

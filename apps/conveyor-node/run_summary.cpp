#include "apps/conveyor-node/run_summary.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <sstream>

#include "core/base/json_number.hpp"
#include "core/base/quoted_string.hpp"

namespace conveyor {
namespace {

// Samples the trainers never saw and the pipeline did not quarantine or filter out, over every
// epoch.
std::uint64_t lost_samples(const run_facts& f, const training_record::totals& seen,
                           const pipeline_report& report) {
  auto expected = f.info.epoch_samples * f.info.epochs;
  auto accounted =
      f.info.delivered_before + seen.ledger.delivered + report.quarantined + report.filtered;
  return expected > accounted ? expected - accounted : 0;
}

double mean_epoch_s(const std::vector<double>& ends) {
  if (ends.empty()) {
    return 0;
  }
  return ends.back() / static_cast<double>(ends.size());
}

// [a,b,...] of `values`, each written as JSON by `format`.
template <class T, class Format>
std::string json_list(const std::vector<T>& values, Format format) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : ",") + format(values[i]);
  }
  return out + "]";
}

template <class T>
std::string number_list(const std::vector<T>& values) {
  return json_list(values, [](const T& v) { return json_number(static_cast<double>(v)); });
}

std::vector<double> megabytes(const std::vector<std::uint64_t>& bytes) {
  std::vector<double> out;
  for (auto b : bytes) {
    out.push_back(static_cast<double>(b) / 1e6);
  }
  return out;
}

// Per epoch, the mean size of a request in KiB (0 for an epoch without one).
std::vector<double> mean_kib(const std::vector<std::uint64_t>& bytes,
                             const std::vector<std::uint64_t>& requests) {
  std::vector<double> out;
  for (std::size_t e = 0; e < bytes.size() && e < requests.size(); ++e) {
    out.push_back(requests[e] == 0
                      ? 0.0
                      : static_cast<double>(bytes[e]) / static_cast<double>(requests[e]) / 1024.0);
  }
  return out;
}

// {"name":number,...}, as JSON.
std::string number_object(const std::vector<std::pair<std::string, double>>& parts) {
  std::string out = "{";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "\"" : ",\"") + parts[i].first + "\":" + json_number(parts[i].second);
  }
  return out + "}";
}

}  // namespace

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

bool run_is_clean(const run_facts& facts, const training_record::totals& seen,
                  const pipeline_report& report) {
  return lost_samples(facts, seen, report) == 0 && seen.ledger.duplicates == 0 &&
         report.duplicates == 0;
}

std::string summary_json(const run_facts& f, const training_record::totals& seen,
                         const pipeline_report& report) {
  const auto& i = f.info;
  auto busy = seen.stall_s + seen.step_s;
  std::ostringstream out;
  out << "{\"samples\":" << seen.samples << ",\"epochs\":" << i.epochs
      << ",\"epoch_s\":" << json_number(mean_epoch_s(seen.epoch_end_s))
      << ",\"samples_per_s\":" << json_number(f.wall_s > 0 ? seen.samples / f.wall_s : 0)
      << ",\"stall_s\":" << json_number(seen.stall_s) << ",\"stall_fraction\":"
      << (f.step_ms > 0 && busy > 0 ? json_number(seen.stall_s / busy) : std::string("null"))
      << ",\"lost\":" << lost_samples(f, seen, report)
      << ",\"duplicates\":" << seen.ledger.duplicates + report.duplicates
      << ",\"quarantined\":" << report.quarantined << ",\"filtered\":" << report.filtered
      << ",\"peak_rss_mb\":" << json_number(peak_rss_mb())
      << ",\"wall_s\":" << json_number(f.wall_s) << ",\"batches\":" << seen.batches
      << ",\"policy\":\"" << i.policy << "\""
      << ",\"shuffle\":\"" << i.shuffle << "\",\"shuffle_block\":" << i.shuffle_block
      << ",\"shuffle_span\":" << i.shuffle_span << ",\"gpus\":" << i.gpus
      << ",\"preprocessors\":" << i.preprocessors << ",\"batch_size\":" << i.batch_size
      << ",\"prefetch_batches\":" << i.prefetch_batches
      << ",\"window_samples\":" << i.window_samples
      << ",\"peak_in_flight\":" << report.peak_in_flight
      << ",\"step_ms\":" << json_number(f.step_ms) << ",\"dataset_size\":" << i.dataset_size
      << ",\"epoch_samples\":" << i.epoch_samples << ",\"handoffs\":" << report.handoffs
      << ",\"straggler_fraction\":"
      << json_number(seen.samples > 0 ? static_cast<double>(report.handoffs) / seen.samples : 0)
      << ",\"early_handoffs\":" << report.early_handoffs
      << ",\"steps_executed\":" << report.steps_executed << ",\"retries\":" << report.retries
      << ",\"restarts\":" << report.restarts << ",\"hangs\":" << report.hangs
      << ",\"time_ms_per_sample\":" << number_object(report.time_per_sample_ms)
      << ",\"sample_ms\":" << number_object(report.sample_ms)
      << ",\"bottleneck\":" << quoted_string(report.bottleneck)
      << ",\"bottleneck_shares\":" << number_object(report.bottleneck_shares)
      << ",\"autotune_changes\":" << report.autotune_changes
      << ",\"autotune\":" << number_object(report.autotune_counts) << ",\"trainer_samples_per_s\":"
      << (report.trainer_samples_per_s > 0 ? json_number(report.trainer_samples_per_s) : "null")
      << ",\"epoch_end_s\":" << number_list(seen.epoch_end_s)
      << ",\"epoch_stall_s\":" << number_list(seen.epoch_stall_s)
      << ",\"cache_hits\":" << number_list(report.epoch_cache_hits)
      << ",\"disk_hits\":" << number_list(report.epoch_disk_hits)
      << ",\"storage_reads\":" << number_list(report.epoch_storage_reads)
      << ",\"storage_mb\":" << number_list(megabytes(report.epoch_storage_bytes))
      << ",\"disk_mb\":" << number_list(seen.epoch_disk_mb)
      << ",\"peer_fetches\":" << number_list(report.epoch_peer_fetches)
      << ",\"peer_mb\":" << number_list(megabytes(report.epoch_peer_bytes))
      << ",\"peer_fallbacks\":" << number_list(report.epoch_peer_fallbacks)
      << ",\"peer_served\":" << number_list(report.epoch_peer_served)
      << ",\"failed_peers\":" << json_list(report.failed_peers, quoted_string)
      << ",\"s3_requests\":" << number_list(report.epoch_s3_requests)
      << ",\"s3_mb\":" << number_list(megabytes(report.epoch_s3_bytes)) << ",\"s3_request_kib\":"
      << number_list(mean_kib(report.epoch_s3_bytes, report.epoch_s3_requests))
      << ",\"s3_fetch_s\":" << number_list(report.epoch_s3_fetch_s)
      << ",\"s3_attempts\":" << report.s3_attempts << ",\"s3_retries\":" << report.s3_retries
      << ",\"s3_open_requests\":" << report.s3_open_requests
      << ",\"s3_failures\":" << number_object(report.s3_failures)
      << ",\"cached_samples\":" << report.cached_samples
      << ",\"cached_mb\":" << json_number(static_cast<double>(report.cached_bytes) / 1e6)
      << ",\"cached_disk_mb\":" << json_number(static_cast<double>(report.cached_disk_bytes) / 1e6)
      << ",\"start_epoch\":" << i.start_epoch << ",\"delivered_before\":" << i.delivered_before
      << ",\"interrupted\":" << (f.interrupted ? "true" : "false") << "}";
  return out.str();
}

}  // namespace conveyor

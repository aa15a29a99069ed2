#include "apps/conveyor-analyze/analysis_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/base/json_number.hpp"
#include "core/base/quoted_string.hpp"

namespace conveyor {
namespace {

using analysis::bottleneck;
using analysis::prediction;
using analysis::rates;

// The fetch rate with a `cached` share from memory.
double fetch_rate(const analysis_inputs& in, double cached) {
  return analysis::fetch_with_cache(cached, in.fetch.warm_rate(), in.fetch.cold_rate());
}

rates steady_rates(const analysis_inputs& in, double prep) {
  return {in.ingestion, prep, fetch_rate(in, in.cached_fraction)};
}

std::string number(double v, const char* format = "%.3g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A rate in samples/s, whole.
std::string per_s(double v) {
  return number(v, "%.0f");
}

std::vector<what_if_row> by_preprocessors(const analysis_inputs& in) {
  std::vector<what_if_row> out;
  const int most = std::clamp(in.cores * 4, 8, 64);
  for (int w = 1; w <= most; ++w) {
    out.push_back({std::to_string(w), in.scaling.extrapolated(w),
                   analysis::predict(steady_rates(in, in.scaling.rate(w)), in.epoch_samples)});
  }
  return out;
}

std::vector<what_if_row> by_cache_fraction(const analysis_inputs& in, double prep) {
  std::vector<what_if_row> out;
  for (int tenth = 0; tenth <= 10; ++tenth) {
    const double x = tenth / 10.0;
    out.push_back({number(x, "%.1f"), false,
                   analysis::predict({in.ingestion, prep, fetch_rate(in, x)}, in.epoch_samples)});
  }
  return out;
}

// A step of trainer.step_ms per batch whatever its size (as the node's simulated trainer):
// the trainer's demand grows with the batch. Empty for a trainer that takes no time.
std::vector<what_if_row> by_batch_size(const analysis_inputs& in, double prep) {
  std::vector<what_if_row> out;
  if (!std::isfinite(in.ingestion)) {
    return out;
  }
  for (auto factor : {0.5, 1.0, 2.0, 4.0}) {
    auto b = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::llround(static_cast<double>(in.batch_size) * factor)));
    rates r = steady_rates(in, prep);
    r.ingestion = analysis::ingestion_rate(in.gpus, b, in.step_ms);
    out.push_back({std::to_string(b), false, analysis::predict(r, in.epoch_samples)});
  }
  return out;
}

// Measured on every core with decode's scaled on and off, brought to the configured count.
std::vector<what_if_row> by_scaled_decode(const analysis_inputs& in, double prep) {
  std::vector<what_if_row> out;
  if (!in.scaled_on_rate || !in.scaled_off_rate) {
    return out;
  }
  const double configured = in.scaled_configured ? *in.scaled_on_rate : *in.scaled_off_rate;
  for (bool scaled : {true, false}) {
    const double rate = prep * (scaled ? *in.scaled_on_rate : *in.scaled_off_rate) / configured;
    out.push_back({scaled ? "true" : "false", false,
                   analysis::predict(steady_rates(in, rate), in.epoch_samples)});
  }
  return out;
}

std::string recommend_for_prep(const analysis_inputs& in, const analysis_result& out) {
  std::string text;
  if (auto workers = in.scaling.workers_for(in.ingestion)) {
    text = "prep-bound: " + std::to_string(*workers) + " preprocessors would reach the trainer's " +
           per_s(in.ingestion) + " samples/s";
    if (*workers > in.cores) {
      text += " (this machine has " + std::to_string(in.cores) + " cores: scale out, or " +
              "lighten the transforms)";
    }
  } else {
    text = "prep-bound: the loader prepares " + per_s(out.steady.samples_per_s) +
           " samples/s; each core adds about " + per_s(in.scaling.per_worker());
  }
  if (!out.by_scaled_decode.empty() && !in.scaled_configured &&
      out.by_scaled_decode[0].outcome.samples_per_s > out.steady.samples_per_s * 1.05) {
    text += "; decode scaled = true would prepare " +
            per_s(out.by_scaled_decode[0].outcome.samples_per_s) + " samples/s";
  }
  return text;
}

std::string recommend_for_fetch(const analysis_inputs& in, const analysis_result& out) {
  const double target = std::min(in.ingestion, out.steady_rates.prep);
  auto x = analysis::cache_fraction_for(target, in.fetch.warm_rate(), in.fetch.cold_rate());
  std::string text = "fetch-bound: ";
  if (x) {
    const double bytes = static_cast<double>(in.fetch.bytes) /
                         static_cast<double>(in.fetch.samples) *
                         static_cast<double>(in.dataset_size) * *x;
    // cache.memory's M is MiB (parse_byte_size).
    text += "a cache of " + number(100 * *x, "%.0f") + "% of the dataset ([cache] memory = \"" +
            number(std::ceil(bytes / (1024.0 * 1024.0)), "%.0f") + "M\") removes the stall";
  } else {
    text += "even from memory, reads are slower than the rest: more readers (pipeline.readers)";
  }
  if (in.fetch.files > in.dataset_size / 2 && in.fetch.samples > 0 &&
      in.fetch.bytes / in.fetch.samples < 512 * 1024) {
    text += "; many small files: pack them into record shards (conveyor-pack)";
  }
  return text;
}

std::string recommend(const analysis_inputs& in, const analysis_result& out) {
  switch (out.steady.limit) {
    case bottleneck::trainer: {
      auto enough = in.scaling.workers_for(in.ingestion);
      return "trainer-bound: the loader keeps up (prep " + per_s(out.steady_rates.prep) +
             ", fetch " + per_s(out.steady_rates.fetch) + " samples/s for " + per_s(in.ingestion) +
             " asked)" +
             (enough && *enough < in.preprocessors
                  ? "; " + std::to_string(*enough) + " preprocessors would still keep up"
                  : "");
    }
    case bottleneck::prep:
      return recommend_for_prep(in, out);
    case bottleneck::fetch:
    case bottleneck::window:
      break;
  }
  return recommend_for_fetch(in, out);
}

}  // namespace

analysis_result analyse(const analysis_inputs& in) {
  analysis_result out;
  const double prep = in.scaling.rate(in.preprocessors);
  const analysis::rates first_rates{in.ingestion, prep, in.fetch.cold_rate()};  // storage cold
  out.steady_rates = steady_rates(in, prep);
  out.first_epoch = analysis::predict(first_rates, in.epoch_samples);
  out.steady = analysis::predict(out.steady_rates, in.epoch_samples);
  out.by_preprocessors = by_preprocessors(in);
  out.by_cache_fraction = by_cache_fraction(in, prep);
  out.by_batch_size = by_batch_size(in, prep);
  out.by_scaled_decode = by_scaled_decode(in, prep);
  out.recommendation = recommend(in, out);
  return out;
}

namespace {

std::string stall_text(const prediction& p) {
  return p.stall_fraction ? number(100 * *p.stall_fraction, "%.1f") + "%" : "-";
}

void what_if_table(std::ostringstream& o, const std::string& title,
                   const std::vector<what_if_row>& rows) {
  if (rows.empty()) {
    return;
  }
  o << "\n" << title << "\n";
  o << "  setting   samples/s   epoch s   stall    bottleneck\n";
  for (const auto& r : rows) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-8s %10.1f %9.1f %7s    %s%s\n", r.setting.c_str(),
                  r.outcome.samples_per_s, r.outcome.epoch_s, stall_text(r.outcome).c_str(),
                  std::string(analysis::bound_name(r.outcome.limit)).c_str(),
                  r.extrapolated ? " (extrapolated)" : "");
    o << line;
  }
}

}  // namespace

std::string render_text(const analysis_inputs& in, const analysis_result& out) {
  std::ostringstream o;
  o << "verdict: " << analysis::bound_name(out.steady.limit) << ": an epoch of " << in.epoch_samples
    << " samples takes " << number(out.steady.epoch_s) << " s (" << number(out.first_epoch.epoch_s)
    << " s the first, storage cold); the trainer stalls " << stall_text(out.steady)
    << " of its time\n";
  o << "recommendation: " << out.recommendation << "\n\n";
  o << "rate          samples/s     MB/s   how it was measured\n";
  char line[256];
  std::snprintf(line, sizeof line, "ingestion  %12.1f      -     %s\n", in.ingestion,
                in.ingestion_source.c_str());
  o << line;
  std::snprintf(line, sizeof line,
                "prep       %12.1f      -     the node's pipeline on %llu samples in memory, "
                "%d preprocessors\n",
                out.steady_rates.prep, static_cast<unsigned long long>(in.prep_samples),
                in.preprocessors);
  o << line;
  std::snprintf(line, sizeof line,
                "fetch cold %12.1f %8.1f   %llu samples in epoch order, %d reader%s, the page "
                "cache dropped for %llu of %llu files\n",
                in.fetch.cold_rate(), in.fetch.cold_mb_s(),
                static_cast<unsigned long long>(in.fetch.samples), in.readers,
                in.readers == 1 ? "" : "s", static_cast<unsigned long long>(in.fetch.files_dropped),
                static_cast<unsigned long long>(in.fetch.files));
  o << line;
  std::snprintf(line, sizeof line, "fetch warm %12.1f %8.1f   the same reads again\n",
                in.fetch.warm_rate(), in.fetch.warm_mb_s());
  o << line;
  o << "later epochs find " << number(100 * in.cached_fraction, "%.0f")
    << "% of the samples in memory: " << in.cache_note << "\n";
  o << "per sample, one worker: mean " << number(in.costs.mean_ms) << " ms, p50 "
    << number(in.costs.p50_ms) << ", p90 " << number(in.costs.p90_ms) << ", p99 "
    << number(in.costs.p99_ms) << ", max " << number(in.costs.max_ms) << " ms (";
  for (std::size_t i = 0; i < in.costs.step_mean_ms.size(); ++i) {
    o << (i ? ", " : "") << in.costs.step_mean_ms[i].first << " "
      << number(in.costs.step_mean_ms[i].second);
  }
  o << ")\n";
  what_if_table(o, "what if: preprocessors", out.by_preprocessors);
  what_if_table(o, "what if: cached fraction of the dataset (later epochs)", out.by_cache_fraction);
  what_if_table(o, "what if: batch size (trainer.step_ms per batch)", out.by_batch_size);
  what_if_table(o, "what if: decode scaled", out.by_scaled_decode);
  return o.str();
}

namespace {

std::string prediction_json(const prediction& p) {
  return "{\"bottleneck\":" + quoted_string(analysis::to_string(p.limit)) +
         ",\"samples_per_s\":" + json_number(p.samples_per_s) +
         ",\"epoch_s\":" + json_number(p.epoch_s) +
         ",\"stall_fraction\":" + (p.stall_fraction ? json_number(*p.stall_fraction) : "null") +
         "}";
}

std::string rows_json(const std::vector<what_if_row>& rows, const char* key) {
  std::string out = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    auto p = prediction_json(rows[i].outcome);
    // Every setting is a JSON literal already: a number, true or false.
    out += (i ? "," : "") + std::string("{\"") + key + "\":" + rows[i].setting +
           ",\"extrapolated\":" + (rows[i].extrapolated ? "true" : "false") + "," + p.substr(1);
  }
  return out + "]";
}

std::string costs_json(const sample_costs& c) {
  std::string steps = "{";
  for (std::size_t i = 0; i < c.step_mean_ms.size(); ++i) {
    steps += (i ? "," : "") + quoted_string(c.step_mean_ms[i].first) + ":" +
             json_number(c.step_mean_ms[i].second);
  }
  return "{\"mean\":" + json_number(c.mean_ms) + ",\"p50\":" + json_number(c.p50_ms) +
         ",\"p90\":" + json_number(c.p90_ms) + ",\"p99\":" + json_number(c.p99_ms) +
         ",\"max\":" + json_number(c.max_ms) + ",\"steps\":" + steps + "}}";
}

std::string scaling_json(const analysis_inputs& in) {
  std::string out = "[";
  const auto& m = in.scaling.measured();
  for (std::size_t i = 0; i < m.size(); ++i) {
    out += (i ? "," : "") + std::string("{\"workers\":") + std::to_string(i + 1) +
           ",\"samples_per_s\":" + json_number(m[i]) + "}";
  }
  return out + "]";
}

}  // namespace

std::string render_json(const analysis_inputs& in, const analysis_result& out) {
  const auto& f = in.fetch;
  std::ostringstream o;
  o << "{\"topology\":" << quoted_string(in.topology)
    << ",\"dataset\":{\"path\":" << quoted_string(in.dataset_path)
    << ",\"samples\":" << in.dataset_size << ",\"epoch_samples\":" << in.epoch_samples
    << ",\"mean_sample_kb\":"
    << json_number(f.samples ? static_cast<double>(f.bytes) / f.samples / 1e3 : 0) << "}"
    << ",\"ingestion\":{\"samples_per_s\":" << json_number(in.ingestion)
    << ",\"source\":" << quoted_string(in.ingestion_source) << ",\"gpus\":" << in.gpus
    << ",\"batch_size\":" << in.batch_size << ",\"step_ms\":" << json_number(in.step_ms) << "}"
    << ",\"prep\":{\"preprocessors\":" << in.preprocessors << ",\"cores\":" << in.cores
    << ",\"samples\":" << in.prep_samples
    << ",\"samples_per_s\":" << json_number(out.steady_rates.prep)
    << ",\"scaling\":" << scaling_json(in) << ",\"sample_ms\":" << costs_json(in.costs)
    << ",\"scaled_decode\":{\"configured\":" << (in.scaled_configured ? "true" : "false")
    << ",\"on_samples_per_s\":" << (in.scaled_on_rate ? json_number(*in.scaled_on_rate) : "null")
    << ",\"off_samples_per_s\":" << (in.scaled_off_rate ? json_number(*in.scaled_off_rate) : "null")
    << "}}"
    << ",\"fetch\":{\"readers\":" << in.readers << ",\"samples\":" << f.samples
    << ",\"failed\":" << f.failed << ",\"cold_samples_per_s\":" << json_number(f.cold_rate())
    << ",\"cold_mb_per_s\":" << json_number(f.cold_mb_s())
    << ",\"warm_samples_per_s\":" << json_number(f.warm_rate())
    << ",\"warm_mb_per_s\":" << json_number(f.warm_mb_s()) << ",\"files\":" << f.files
    << ",\"files_dropped_from_page_cache\":" << f.files_dropped
    << ",\"cached_fraction\":" << json_number(in.cached_fraction)
    << ",\"cache_note\":" << quoted_string(in.cache_note) << "}"
    << ",\"verdict\":{\"first_epoch\":" << prediction_json(out.first_epoch)
    << ",\"later_epochs\":" << prediction_json(out.steady)
    << ",\"recommendation\":" << quoted_string(out.recommendation) << "}"
    << ",\"what_if\":{\"preprocessors\":" << rows_json(out.by_preprocessors, "workers")
    << ",\"cache_fraction\":" << rows_json(out.by_cache_fraction, "fraction")
    << ",\"batch_size\":" << rows_json(out.by_batch_size, "batch_size")
    << ",\"scaled_decode\":" << rows_json(out.by_scaled_decode, "scaled") << "}}";
  return o.str();
}

}  // namespace conveyor

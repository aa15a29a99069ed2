// conveyor-analyze: why would a training job's GPUs wait, and what would fix it? DS-Analyzer's
// differential measurement on the user's own dataset and transforms: the trainer's rate, the
// preparation rate with the data in memory (for 1 .. every core), and the fetch rate from
// storage, cold and warm; then the verdict (the slowest of the three), the predicted epoch
// time and stall, what-ifs (preprocessors, cache size, batch size, scaled decode) and a
// recommendation. A table on stdout (or --json), a chart with --plot.
// Exit codes: 0 done; 1 nothing could be measured (no sample read); 2 a bad command line or
// topology (the message names file, line, column and key).
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "api/gpu_decoding.hpp"
#include "api/resolve_topology.hpp"
#include "apps/common/command_line.hpp"
#include "apps/conveyor-analyze/analysis_report.hpp"
#include "apps/conveyor-analyze/measurements.hpp"
#include "apps/conveyor-analyze/stall_chart.hpp"
#include "core/base/log.hpp"

namespace {

using namespace conveyor;

struct arguments {
  std::string topology_file;
  std::vector<std::string> overrides;
  bool json = false;
  std::string plot_file;
  std::string log_level = "warn";
  measure_options measure;
  double ingestion = 0;
};

int analyse_topology(const arguments& args) {
  auto logger = log("analyze");
  auto t = load_topology_file_to_run(args.topology_file, args.overrides);
  if (!t) {
    logger->error("{}", t.error().what());
    return 2;
  }
  auto spec = resolve_topology(*t);
  if (!spec) {
    logger->error("{}", spec.error().what());
    return 2;
  }
  auto in = measure_all(*t, *spec, args.measure);
  if (in.prep_samples == 0 || in.fetch.samples == in.fetch.failed) {
    logger->error("{}: no sample of dataset.path {} could be read", t->source, t->dataset.path);
    return 1;
  }
  auto out = analyse(in);
  std::cout << (args.json ? render_json(in, out) + "\n" : render_text(in, out));
  if (!args.plot_file.empty()) {
    if (auto ok = write_stall_chart(args.plot_file, in, out); !ok) {
      logger->error("{}", ok.error().what());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"conveyor-analyze: why the GPUs wait, and what would fix it (DS-Analyzer)"};
  arguments args;
  app.add_option("--topology", args.topology_file, "the node's TOML topology")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--set", args.overrides, "override one key, e.g. --set trainer.step_ms=120");
  app.add_flag("--json", args.json, "print one JSON document instead of the table");
  app.add_option("--plot", args.plot_file, "write a PNG chart of the predicted stall");
  app.add_option("--samples", args.measure.prep_samples,
                 "samples held in memory for the preparation measure (default 300)")
      ->check(CLI::PositiveNumber);
  app.add_option("--fetch-samples", args.measure.fetch_samples,
                 "samples read cold, then warm, for the fetch measure (default 2000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ingestion", args.ingestion,
                 "the trainer's rate in samples/s, when trainer.step_ms does not tell it (a "
                 "node's JSON line measures it: trainer_samples_per_s)")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", args.log_level, "trace, debug, info, warn (default), error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  if (auto exit_code = parse_command_line(app, argc, argv)) {
    return *exit_code;
  }
  if (args.ingestion > 0) {
    args.measure.ingestion = args.ingestion;
  }
  conveyor::set_log_level(spdlog::level::from_str(args.log_level));
  return analyse_topology(args);
}

#include "apps/conveyor-node/serve_mode.hpp"

#include <unistd.h>

#include <numeric>
#include <sstream>
#include <thread>

#include "api/create_pipeline.hpp"
#include "api/resolve_devices.hpp"
#include "api/resolve_order.hpp"
#include "api/resolve_topology.hpp"
#include "apps/conveyor-node/feed_server.hpp"
#include "apps/conveyor-node/run_summary.hpp"
#include "core/base/json_number.hpp"
#include "core/base/log.hpp"
#include "core/serving/unix_socket.hpp"
#include "core/storage/sample_source.hpp"

namespace conveyor {
namespace {

// The ranks a topology serves: one per GPU slot.
expected<int> ranks_of(const topology& t) {
  auto devices = resolve_devices(t.gpus, t.source);
  if (!devices) {
    return std::move(devices).error();
  }
  return gpu_slots(t.gpus, *devices);
}

// The run a topology serves, known before its pipeline opens (clients' resume states are
// checked against it as they arrive), of `dataset`, the topology's.
expected<run_identity> run_of(const topology& t, const sample_source& dataset) {
  auto order = resolve_order(t, dataset);
  if (!order) {
    return std::move(order).error();
  }
  return run_identity{dataset.size(), t.dataset.seed, *order,
                      static_cast<std::uint64_t>(t.trainer.epochs)};
}

// The key states are signed with (serve.state_key_file), if one is set.
expected<std::optional<state_key>> key_of(const topology& t) {
  if (t.serve.state_key_file.empty()) {
    return std::optional<state_key>{};
  }
  auto key = state_key::load_or_make(t.serve.state_key_file);
  if (!key) {
    return error{key.error().code(), t.source + ": " + key.error().message()};
  }
  return std::optional<state_key>(std::move(*key));
}

}  // namespace

std::string serve_json(const pipeline_info& info, const serve_outcome& outcome,
                       const pipeline_report& report, double wall_s, bool interrupted) {
  auto total = std::accumulate(outcome.released_per_job.begin(), outcome.released_per_job.end(),
                               std::uint64_t{0});
  std::ostringstream out;
  out << "{\"mode\":\"serve\",\"jobs\":" << outcome.released_per_job.size()
      << ",\"ranks\":" << info.gpus << ",\"epochs\":" << info.epochs
      << ",\"dataset_size\":" << info.dataset_size << ",\"samples_per_job\":[";
  for (std::size_t j = 0; j < outcome.released_per_job.size(); ++j) {
    out << (j == 0 ? "" : ",") << outcome.released_per_job[j];
  }
  out << "],\"samples_per_s\":" << json_number(wall_s > 0 ? static_cast<double>(total) / wall_s : 0)
      << ",\"attaches\":" << outcome.attaches << ",\"lost_clients\":" << outcome.lost_clients
      << ",\"refused_clients\":" << outcome.refused << ",\"slow_clients\":" << outcome.slow_clients
      << ",\"delivered\":" << report.delivered << ",\"lost\":" << report.lost
      << ",\"duplicates\":" << report.duplicates << ",\"quarantined\":" << report.quarantined
      << ",\"filtered\":" << report.filtered << ",\"steps_executed\":" << report.steps_executed
      << ",\"batch_size\":" << info.batch_size << ",\"prefetch_batches\":" << info.prefetch_batches
      << ",\"peak_rss_mb\":" << json_number(peak_rss_mb()) << ",\"wall_s\":" << json_number(wall_s)
      << ",\"complete\":" << (outcome.complete ? "true" : "false")
      << ",\"interrupted\":" << (interrupted ? "true" : "false") << "}";
  return out.str();
}

int run_serving(const topology& t, stop_token& stop) {
  auto logger = log("node");
  auto ranks = ranks_of(t);
  if (!ranks) {
    logger->error("{}", ranks.error().what());
    return 2;
  }
  auto fields = resolve_fields(t, /*normalize_on_device=*/false);
  if (!fields) {
    logger->error("{}", fields.error().what());
    return 2;
  }
  auto feeds = served_feeds::create(t, *fields, *ranks);
  // Once: the pipeline opens with them (a Python Dataset's workers started and probed once).
  auto resolved = std::make_shared<const resolved_fields>(std::move(*fields));
  if (!feeds) {
    logger->error("{}", feeds.error().what());
    return 2;
  }
  auto dataset = open_dataset(t);  // once: the pipeline opens on it
  if (!dataset) {
    logger->error("{}", dataset.error().what());
    return 2;
  }
  const auto run = run_of(t, **dataset);
  if (!run) {
    logger->error("{}", run.error().what());
    return 2;
  }
  auto key = key_of(t);
  if (!key) {
    logger->error("{}", key.error().what());
    return 2;
  }
  auto listener = listen_unix(t.serve.socket, t.serve.mode);
  if (!listener) {
    logger->error("{}: serve.socket: {}", t.source, listener.error().what());
    return 2;
  }
  // Each trainer process's wait, for /metrics ([monitor] metrics).
  const auto waits = std::make_shared<client_waits>(t.serve.jobs, *ranks);
  pipeline_opener open = [&](const run_state* resume) {
    return create_pipeline(
        t, {feeds->feed_memory(), resume, "the ranks' resume states", *dataset, resolved, waits});
  };
  std::optional<pipeline> p;
  if (!t.serve.resume) {  // else it starts once every rank has attached
    auto opened = open(nullptr);
    if (!opened) {
      logger->error("{}", opened.error().what());
      return 2;
    }
    p.emplace(std::move(*opened));
  }
  logger->info(
      "serving {} ranks x {} jobs on {} ({} slots of {} bytes per rank, in memfd "
      "regions){}",
      *ranks, t.serve.jobs, t.serve.socket, feeds->slots(), feeds->layout().slot_bytes,
      t.serve.resume ? "; the pipeline starts once every rank has attached (serve.resume)" : "");
  auto start = std::chrono::steady_clock::now();
  const serve_setup setup{t.serve, *run, *key ? &**key : nullptr, waits};
  auto outcome = serve_clients(setup, p, open, *feeds, listener->fd(), stop);
  listener->close();
  auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto info = p ? p->info() : pipeline_info{};
  auto report = p ? p->report() : pipeline_report{};
  auto failure = p ? p->failure() : std::nullopt;
  // A lingering node's run ends when it is stopped: once complete, that is no interruption.
  bool interrupted = stop.requested() && !(t.serve.linger && outcome.complete);
  std::printf("%s\n", serve_json(info, outcome, report, wall, interrupted).c_str());
  std::fflush(stdout);
  if (outcome.start_failure) {
    return 2;  // logged: the ranks' states could not start the pipeline
  }
  if (failure) {
    logger->error("the pipeline stopped: {}", failure->what());
    return 1;
  }
  if (interrupted) {
    logger->warn("interrupted: clients detached, in-flight work abandoned");
    return 1;
  }
  return outcome.complete && report.duplicates == 0 && report.lost == 0 ? 0 : 1;
}

}  // namespace conveyor

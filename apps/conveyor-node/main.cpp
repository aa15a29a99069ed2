// conveyor-node: runs one Conveyor node from a TOML topology, with a simulated trainer per
// GPU (or, with serve.socket set, serving trainer processes that attach to it), and prints one
// JSON line with the run's figures on stdout (logs go to stderr).
// Exit codes: 0 a clean run; 1 a run that failed or lost/duplicated samples; 2 a bad command
// line or topology; 130 (SIGINT, Ctrl-C) or 143 (SIGTERM): stopped by the operator, in-flight
// work abandoned, the JSON line still printed with "interrupted": true.
#include "apps/common/command_line.hpp"

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "api/create_pipeline.hpp"
#include "api/gpu_decoding.hpp"
#include "apps/common/progress_bar.hpp"
#include "apps/conveyor-node/checkpointer.hpp"
#include "apps/conveyor-node/owner_watch.hpp"
#include "apps/conveyor-node/run_summary.hpp"
#include "apps/conveyor-node/serve_mode.hpp"
#include "apps/conveyor-node/simulated_trainer.hpp"
#include "apps/conveyor-node/stop_signals.hpp"
#include "conveyor/pipeline.hpp"
#include "core/base/allocator_tuning.hpp"
#include "core/base/log.hpp"

namespace {

using namespace conveyor;

struct arguments {
  std::string topology_file;
  std::vector<std::string> overrides;
  std::string log_level = "info";
  std::string checkpoint_file;  ///< --checkpoint: where the run's state is kept
  std::string resume_file;      ///< --resume: the state to go on from
  pid_t owner = 0;              ///< --owner: the process whose end stops the node; 0: none
};

// A non-negative integer from the environment variable `name`; nullopt when it is not set,
// an error naming it when it is not such a number.
expected<std::optional<int>> environment_integer(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return std::optional<int>{};
  }
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1000000) {
    return error{errc::invalid_config,
                 std::string("environment variable ") + name + "=\"" + text + "\" is not a count"};
  }
  return std::optional<int>(static_cast<int>(value));
}

// torchrun's RANK and WORLD_SIZE, for what [cluster] does not say; false (logged) when they
// are not usable.
bool cluster_from_environment(topology& t) {
  auto rank = environment_integer("RANK");
  auto world = environment_integer("WORLD_SIZE");
  for (const auto* bad : {&rank, &world}) {
    if (!*bad) {
      log("node")->error("{}", bad->error().what());
      return false;
    }
  }
  auto& c = t.cluster;
  c.rank = c.rank ? c.rank : *rank;
  c.world = c.world ? c.world : *world;
  if (c.rank_or_default() >= c.world_or_default()) {
    log("node")->error(
        "{}: cluster.rank {} is not below cluster.world {} (from the topology, "
        "or RANK and WORLD_SIZE)",
        t.source, c.rank_or_default(), c.world_or_default());
    return false;
  }
  return true;
}

// The pipeline of `t`, resumed from --resume when given; the error (logged) otherwise.
std::optional<pipeline> open_pipeline(const arguments& args, const topology& t) {
  auto logger = log("node");
  std::optional<run_state> resume;
  if (!args.resume_file.empty()) {
    auto loaded = run_state::load(args.resume_file);
    if (!loaded) {
      logger->error("--resume {}", loaded.error().what());
      return std::nullopt;
    }
    resume = std::move(*loaded);
  }
  auto p = create_pipeline(
      t,
      {{}, resume ? &*resume : nullptr, "--resume " + args.resume_file, nullptr, nullptr, nullptr});
  if (!p) {
    logger->error("{}", p.error().what());
    return std::nullopt;
  }
  if (resume) {
    logger->info("resumed from {}: epoch {}, {} samples delivered before", args.resume_file,
                 p->info().start_epoch, p->info().delivered_before);
  }
  return std::move(*p);
}

// trainer.ids_file, when set, into `out`; false (logged) when it cannot be opened.
bool open_audit(const topology& t, std::optional<delivery_audit>& out) {
  if (t.trainer.ids_file.empty()) {
    return true;
  }
  auto opened = delivery_audit::open(t.trainer.ids_file);
  if (!opened) {
    log("node")->error("{}", opened.error().what());
    return false;
  }
  out.emplace(std::move(*opened));
  return true;
}

// --checkpoint, when given, into `out` (its first state written); false (logged) on failure.
bool start_checkpoints(const arguments& args, const topology& t, const pipeline& p,
                       std::optional<checkpointer>& out) {
  if (args.checkpoint_file.empty()) {
    return true;
  }
  auto started = checkpointer::start(p, args.checkpoint_file,
                                     static_cast<std::uint64_t>(t.trainer.checkpoint_every));
  if (!started) {
    return false;
  }
  out.emplace(std::move(*started));
  return true;
}

/// What the node's own trainers write besides the JSON line: both optional.
struct run_records {
  std::optional<delivery_audit> audit;
  std::optional<checkpointer> checkpoints;
};

// A simulated trainer per GPU until the run ends or `stop` is requested; wall seconds.
double train_all(pipeline& p, const topology& t, training_record& record, run_records& records,
                 stop_token& stop) {
  const auto info = p.info();
  auto step = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(t.trainer.step_ms));
  // Batches over all GPUs and epochs still to come, for the progress bar (on a terminal only).
  auto samples_left = info.epoch_samples * info.epochs - info.delivered_before;
  progress_bar bar("train", (samples_left + info.batch_size - 1) / info.batch_size);
  std::mutex bar_mutex;
  std::uint64_t batches_done = 0;
  auto on_batch = [&] {
    if (records.checkpoints && !records.checkpoints->on_batch()) {
      stop.request();  // a run that cannot save its state stops (the error is logged)
    }
    std::lock_guard<std::mutex> lock(bar_mutex);
    bar.update(++batches_done);
  };
  auto* audit = records.audit ? &*records.audit : nullptr;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> trainers;
  for (int g = 0; g < info.gpus; ++g) {
    trainers.emplace_back(
        [&, g] { run_simulated_trainer(p, g, step, record, audit, on_batch, stop); });
  }
  for (auto& th : trainers) {
    th.join();
  }
  bar.finish();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The exit code of a run that printed its JSON line (see the top of this file).
int outcome_code(const arguments& args, const run_records& records, bool saved,
                 const run_facts& facts, const training_record::totals& seen,
                 const pipeline_report& report, const std::optional<error>& failure) {
  auto logger = log("node");
  if (!saved) {
    return 1;  // logged
  }
  if (facts.interrupted) {
    logger->warn(
        "interrupted: in-flight work abandoned{}",
        records.checkpoints ? "; --resume " + args.checkpoint_file + " goes on from here" : "");
    return 1;  // main turns this into 128 + the signal's number
  }
  if (failure) {
    logger->error("the pipeline stopped: {}", failure->what());
    return 1;
  }
  if (auto lost = records.audit ? records.audit->failure() : std::nullopt) {
    logger->error("{} (the audit is incomplete)", lost->what());
    return 1;
  }
  return run_is_clean(facts, seen, report) ? 0 : 1;
}

int run(const arguments& args, stop_token& stop) {
  auto logger = log("node");
  auto t = load_topology_file_to_run(args.topology_file, args.overrides);
  if (!t) {
    logger->error("{}", t.error().what());
    return 2;
  }
  if (!cluster_from_environment(*t)) {
    return 2;
  }
  logger->info("topology {}:\n{}", t->source, describe(*t));
  if (t->serve.enabled()) {
    if (!args.checkpoint_file.empty() || !args.resume_file.empty()) {
      logger->error(
          "--checkpoint and --resume keep the state of the node's own trainers; served "
          "trainers keep theirs (client::state(), Feed.state_dict()) and attach with it");
      return 2;
    }
    return run_serving(*t, stop);
  }
  run_records records;
  if (!open_audit(*t, records.audit)) {
    return 2;
  }
  auto p = open_pipeline(args, *t);
  if (!p || !start_checkpoints(args, *t, *p, records.checkpoints)) {
    return 2;  // logged
  }
  std::thread stopper([&] {
    stop.wait();  // a signal's stop request, or the one the end of the run makes below
    p->shutdown();
  });
  auto info = p->info();
  logger->info("{} preprocessors, {} readers, {} feeders, window {} samples, policy {}",
               info.preprocessors, info.readers, info.gpus, info.window_samples, info.policy);
  training_record record(info.dataset_size, info.epochs);
  auto start = std::chrono::steady_clock::now();
  auto wall = train_all(*p, *t, record, records, stop);
  bool interrupted = stop.requested();
  // What the trainers received, all of it.
  bool saved = !records.checkpoints || records.checkpoints->write_now();
  auto report = p->report();
  auto failure = p->failure();
  stop.request();
  stopper.join();
  run_facts facts{info, t->trainer.step_ms, wall, interrupted};
  auto seen = record.summarize(start);
  std::printf("%s\n", summary_json(facts, seen, report).c_str());
  std::fflush(stdout);
  return outcome_code(args, records, saved, facts, seen, report, failure);
}

}  // namespace

int main(int argc, char** argv) {
  conveyor::keep_freed_memory_for_reuse();
  CLI::App app{"conveyor-node: runs a Conveyor node from a TOML topology"};
  arguments args;
  app.add_option("--topology", args.topology_file, "the node's TOML topology")->required();
  app.add_option("--set", args.overrides,
                 "override a topology key, e.g. --set pipeline.batch_size=32 (repeatable)")
      ->take_all();
  app.add_option("--checkpoint", args.checkpoint_file,
                 "keep the run's state in this file (every trainer.checkpoint_every batches, "
                 "and at the end), for --resume");
  app.add_option("--resume", args.resume_file,
                 "go on from the state in this file (written by --checkpoint): exactly the "
                 "samples it had not delivered, then the later epochs");
  app.add_option("--owner", args.owner,
                 "stop when this process ends, however it ends (conveyor.DataLoader's private "
                 "node: nothing outlives its trainer)")
      ->check(CLI::PositiveNumber);
  app.add_option("--log-level", args.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  if (auto exit_code = conveyor::parse_command_line(app, argc, argv)) {
    return *exit_code;
  }
  set_log_level(spdlog::level::from_str(args.log_level));
  conveyor::stop_token stop;
  conveyor::stop_signals signals([&stop](int sig) {
    conveyor::log("node")->warn("{} received: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stop.request();
  });
  std::unique_ptr<conveyor::owner_watch> owner;
  if (args.owner > 0) {
    auto watch = conveyor::owner_watch::start(args.owner, [&stop, pid = args.owner] {
      conveyor::log("node")->warn("process {} (--owner) ended: stopping", pid);
      stop.request();
    });
    if (!watch) {
      conveyor::log("node")->error("{}", watch.error().what());
      return 2;
    }
    owner = std::move(*watch);
  }
  int code = run(args, stop);
  return signals.received() != 0 ? signals.exit_code() : code;
}

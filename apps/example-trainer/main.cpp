// example-trainer: how a C++ trainer uses Conveyor through the public API only, either way:
// - embedded (include/conveyor/pipeline.hpp): one thread per GPU iterates each epoch's batches
//   and "trains" on them (here: the mean of the tensor, as a stand-in for a forward pass);
// - attached to a serving node (include/conveyor/client.hpp), as one process per rank does:
//   the same loop over the same batch type, and the hand-over latency of its batches.
//
// Embedded, it can stop after N batches per GPU and save where it stands (pipeline::state), and
// resume from such a state: the two runs together deliver every sample of every epoch once.
//
//   example-trainer config/default.toml [--stop-after N --state FILE] [--resume FILE] [key=value
//   ...] example-trainer --attach SOCKET [RANK [JOB]]
#include <conveyor/client.hpp>
#include <conveyor/pipeline.hpp>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {

// The mean of a host float32 tensor; 0 for device memory (a real trainer hands that to its
// framework) or another dtype.
double tensor_mean(const conveyor::tensor_view& t) {
  if (t.type != conveyor::dtype::float32 || t.data == nullptr || t.device >= 0) {
    return 0.0;
  }
  const auto* x = static_cast<const float*>(t.data);
  auto n = t.bytes() / sizeof(float);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += x[i];
  }
  return n ? sum / static_cast<double>(n) : 0.0;
}

// Trains `gpu` from the pipeline's start epoch on; with stop_after > 0, only that many batches.
void train_gpu(conveyor::pipeline& p, int gpu, std::size_t stop_after, std::mutex& print) {
  std::size_t batches = 0;
  for (auto e = p.info().start_epoch; e < p.epochs(); ++e) {
    std::size_t samples = 0;
    double mean = 0;
    for (auto& batch : p.epoch(e, gpu)) {
      samples += batch.size();
      mean = tensor_mean(batch.tensor());  // the batch goes back to the loader after this
      if (++batches == stop_after) {
        return;  // a preemption: the state taken now covers this batch
      }
    }
    std::lock_guard<std::mutex> lock(print);
    std::printf("gpu %d epoch %llu: %zu samples, last batch mean %.4f\n", gpu,
                static_cast<unsigned long long>(e), samples, mean);
  }
}

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of batch::ready_ns()
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

double percentile_us(std::vector<std::uint64_t> ns, double p) {
  if (ns.empty()) {
    return 0;
  }
  auto k = static_cast<std::size_t>(p / 100.0 * static_cast<double>(ns.size() - 1));
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(k), ns.end());
  return static_cast<double>(ns[k]) / 1000.0;
}

int train_attached(const char* socket, int rank, int job) {
  conveyor::client_options options;
  options.attach_timeout_s = 30;  // the node may still be starting
  auto feed = conveyor::client::attach(socket, rank, job, options);
  if (!feed) {
    std::fprintf(stderr, "%s\n", feed.error().what().c_str());
    return 2;
  }
  std::vector<std::uint64_t> handover_ns;
  std::size_t total = 0;
  for (auto e = feed->info().start_epoch; e < feed->epochs(); ++e) {
    std::size_t samples = 0;
    double mean = 0;
    auto range = feed->epoch(e);
    for (auto& batch : range) {
      handover_ns.push_back(now_ns() - batch.ready_ns());
      samples += batch.size();
      mean = tensor_mean(batch.tensor());
    }
    if (range.error()) {
      std::fprintf(stderr, "%s\n", range.error()->what().c_str());
      return 1;
    }
    total += samples;
    std::printf("rank %d job %d epoch %llu: %zu samples, last batch mean %.4f\n", rank, job,
                static_cast<unsigned long long>(e), samples, mean);
  }
  std::printf("rank %d job %d: %zu samples, hand-over p50 %.1f us p99 %.1f us\n", rank, job, total,
              percentile_us(handover_ns, 50), percentile_us(handover_ns, 99));
  return 0;
}

struct embedded_options {
  std::string topology;
  std::vector<std::string> overrides;
  std::size_t stop_after = 0;  ///< batches per GPU, then save the state; 0: the whole run
  std::string state_file;      ///< --state: where the stopped run's state goes
  std::string resume_file;     ///< --resume: the state to go on from
};

bool parse_embedded(int argc, char** argv, embedded_options& o) {
  o.topology = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--stop-after" && has_value) {
      o.stop_after = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--state" && has_value) {
      o.state_file = argv[++i];
    } else if (arg == "--resume" && has_value) {
      o.resume_file = argv[++i];
    } else {
      o.overrides.push_back(arg);
    }
  }
  return (o.stop_after == 0) == o.state_file.empty();
}

conveyor::expected<conveyor::pipeline> open_pipeline(const embedded_options& o) {
  if (o.resume_file.empty()) {
    return conveyor::pipeline::open(o.topology, o.overrides);
  }
  auto state = conveyor::run_state::load(o.resume_file);
  if (!state) {
    return state.error();
  }
  return conveyor::pipeline::open(o.topology, o.overrides, *state);
}

// The stopped run's state, saved: 0, or 1 when it could not be.
int save_state(const conveyor::pipeline& p, const std::string& file) {
  auto state = p.state();
  if (auto saved = state.save(file); !saved) {
    std::fprintf(stderr, "%s\n", saved.error().what().c_str());
    return 1;
  }
  std::printf("stopped; state saved to %s (%zu bytes)\n", file.c_str(), state.bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--attach") == 0) {
    return train_attached(argv[2], argc > 3 ? std::atoi(argv[3]) : 0,
                          argc > 4 ? std::atoi(argv[4]) : 0);
  }
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: example-trainer TOPOLOGY.toml [--stop-after N --state FILE] "
                 "[--resume FILE] [key=value ...]\n"
                 "       example-trainer --attach SOCKET [RANK [JOB]]\n");
    return 2;
  }
  embedded_options options;
  if (!parse_embedded(argc, argv, options)) {
    std::fprintf(stderr, "example-trainer: --stop-after N and --state FILE go together\n");
    return 2;
  }
  auto p = open_pipeline(options);
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().what().c_str());
    return 2;
  }
  std::mutex print;
  std::vector<std::thread> gpus;
  for (int g = 0; g < p->gpus(); ++g) {
    gpus.emplace_back([&, g] { train_gpu(*p, g, options.stop_after, print); });
  }
  for (auto& t : gpus) {
    t.join();
  }
  if (options.stop_after > 0) {
    return save_state(*p, options.state_file);
  }
  auto report = p->report();
  std::printf("delivered %llu, quarantined %llu, duplicates %llu, lost %llu\n",
              static_cast<unsigned long long>(report.delivered),
              static_cast<unsigned long long>(report.quarantined),
              static_cast<unsigned long long>(report.duplicates),
              static_cast<unsigned long long>(report.lost));
  return report.duplicates == 0 && report.lost == 0 && !p->failure() ? 0 : 1;
}

// What the C++/Python boundary costs per sample (issue 47: under 0.3 ms): a worker process
// (core/python/worker_process.hpp) whose dataset[i] returns arrays it already holds, so that
// all that is timed is the boundary: the request, seeding random/numpy, flattening the
// sample, writing its arrays into the worker's own memfd, the reply, checking it here and
// copying the arrays out (as the step does).
// Arguments: the bytes of the sample's array (an int alone at 0; 150528 is a 3x224x224 uint8
// image; 8 MiB a 128^3 float32 volume).
//   build-ci/bench/bench_python_boundary   (figures: bench/results/python_dataset.md)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/python/worker_zygote.hpp"

namespace {

namespace fs = std::filesystem;

constexpr const char* module_py = R"(
import numpy as np


class Held:
    def __init__(self, size):
        self.array = np.ones(size, np.uint8) if size else None

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        return (self.array, i) if self.array is not None else i


def make(size):
    return Held(size)
)";

// A worker over Held(bytes), its setup made by tests/python/worker_setup.py.
conveyor::worker_process start_worker(std::int64_t bytes) {
  const auto dir = fs::temp_directory_path() / ("conveyor-boundary-" + std::to_string(bytes));
  fs::create_directories(dir);
  std::ofstream(dir / "held.py") << module_py << "\nclass Sized(Held):\n"
                                 << "    def __init__(self):\n        super().__init__(" << bytes
                                 << ")\n";
  const auto setup = dir / "setup";
  const auto command = std::string("/usr/bin/python3 ") + CONVEYOR_SOURCE_DIR +
                       "/tests/python/worker_setup.py " + dir.string() + " held Sized " +
                       setup.string();
  if (std::system(command.c_str()) != 0) {
    std::abort();
  }
  std::ifstream in(setup, std::ios::binary);
  conveyor::worker_launch launch;
  launch.script = std::string(CONVEYOR_SOURCE_DIR) + "/python/conveyor_worker.py";
  launch.setup = std::make_shared<std::vector<std::uint8_t>>(std::istreambuf_iterator<char>(in),
                                                             std::istreambuf_iterator<char>());
  static std::shared_ptr<conveyor::worker_zygote> zygote;  // outlives its workers
  auto z = conveyor::worker_zygote::start(launch);
  fs::remove_all(dir);
  if (!z) {
    std::abort();
  }
  zygote = std::move(*z);
  auto w = zygote->fork_worker(0);
  if (!w) {
    std::abort();
  }
  return std::move(*w);
}

void BM_Boundary(benchmark::State& state) {
  auto w = start_worker(state.range(0));
  std::uint64_t i = 0;
  std::vector<std::uint8_t> out;
  for (auto _ : state) {
    if (!w.ask(0, i, i)) {
      state.SkipWithError("ask failed");
      break;
    }
    auto s = w.await(std::chrono::seconds(10));
    if (!s) {
      state.SkipWithError(s.error().what().c_str());
      break;
    }
    for (const auto& f : s->fields) {  // as the step copies them out
      out.resize(f.bytes);
      if (!s->copy(f, out.data())) {
        state.SkipWithError("copy failed");
      }
    }
    benchmark::DoNotOptimize(out.data());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Boundary)->Arg(0)->Arg(150528)->Arg(8 << 20)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

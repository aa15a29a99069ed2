// example-trainer: how a C++ trainer embeds Conveyor, using only the public API
// (include/conveyor/pipeline.hpp). One thread per GPU iterates each epoch's batches and
// "trains" on them (here: the mean of the tensor, as a stand-in for a forward pass).
//
//   example-trainer config/default.toml [key=value ...]
#include <conveyor/pipeline.hpp>

#include <cstdio>
#include <mutex>
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

void train_gpu(conveyor::pipeline& p, int gpu, std::mutex& print) {
  for (std::uint64_t e = 0; e < p.epochs(); ++e) {
    std::size_t samples = 0;
    double mean = 0;
    for (auto& batch : p.epoch(e, gpu)) {
      samples += batch.size();
      mean = tensor_mean(batch.tensor());  // the batch goes back to the loader after this
    }
    std::lock_guard<std::mutex> lock(print);
    std::printf("gpu %d epoch %llu: %zu samples, last batch mean %.4f\n", gpu,
                static_cast<unsigned long long>(e), samples, mean);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: example-trainer TOPOLOGY.toml [key=value ...]\n");
    return 2;
  }
  auto p = conveyor::pipeline::open(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().what().c_str());
    return 2;
  }
  std::mutex print;
  std::vector<std::thread> gpus;
  for (int g = 0; g < p->gpus(); ++g) {
    gpus.emplace_back([&, g] { train_gpu(*p, g, print); });
  }
  for (auto& t : gpus) {
    t.join();
  }
  auto report = p->report();
  std::printf("delivered %llu, quarantined %llu, duplicates %llu, lost %llu\n",
              static_cast<unsigned long long>(report.delivered),
              static_cast<unsigned long long>(report.quarantined),
              static_cast<unsigned long long>(report.duplicates),
              static_cast<unsigned long long>(report.lost));
  return report.duplicates == 0 && report.lost == 0 && !p->failure() ? 0 : 1;
}

// example-libtorch: trains a small CNN with libtorch on the batches of an embedded Conveyor
// pipeline. Each batch becomes a torch tensor without a copy: torch::from_blob over the batch's
// memory, with a deleter that gives the buffer back to Conveyor when torch is done with it.
//
//   example-libtorch TOPOLOGY.toml [key=value ...]
#include <ATen/DLConvertor.h>
#include <torch/torch.h>
#include <conveyor/pipeline.hpp>

#include <cstdio>
#include <memory>

namespace {

// The batch's tensor as a torch tensor over the same memory. The tensor owns the batch: the
// buffer goes back to the pipeline when the last tensor (or view) of it is freed. On a CUDA
// feeder (device memory) torch frees a tensor before the kernels queued on it have run:
// synchronise torch's stream (or wait on an event recorded on it) before the last reference
// goes, so the feeder's next copy does not overwrite memory still being read. Debian's torch
// is CPU-only, where this cannot happen.
torch::Tensor as_tensor(conveyor::batch b) {
  auto view = b.tensor();
  auto dl = conveyor::to_dlpack(view.type);
  auto device =
      view.device < 0 ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, view.device);
  auto owner = std::make_shared<conveyor::batch>(std::move(b));
  return torch::from_blob(
      view.data, view.shape, [owner](void*) mutable { owner.reset(); },
      torch::TensorOptions()
          .dtype(at::toScalarType(DLDataType{dl.code, dl.bits, dl.lanes}))
          .device(device));
}

struct small_cnn : torch::nn::Module {
  explicit small_cnn(std::int64_t classes)
      : conv1(register_module("conv1",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).stride(2)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).stride(2)))),
        head(register_module("head", torch::nn::Linear(32, classes))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv1->forward(x));
    x = torch::relu(conv2->forward(x));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return head->forward(x);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear head;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: example-libtorch TOPOLOGY.toml [key=value ...]\n");
    return 2;
  }
  auto p = conveyor::pipeline::open(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().what().c_str());
    return 2;
  }
  auto info = p->info();
  small_cnn model(static_cast<std::int64_t>(std::max<std::size_t>(info.classes(), 1)));
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (std::uint64_t e = 0; e < p->epochs(); ++e) {
    double loss_sum = 0;
    std::size_t samples = 0;
    auto range = p->epoch(e, 0);
    for (auto& b : range) {
      auto labels = torch::tensor(b.labels(), torch::kLong);
      samples += b.size();
      auto x = as_tensor(std::move(b));
      if (x.scalar_type() != torch::kFloat) {
        x = x.to(torch::kFloat).div_(255);  // a uint8 topology (no normalize step)
      }
      sgd.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model.forward(x), labels);
      loss.backward();
      sgd.step();
      loss_sum += loss.item<double>() * static_cast<double>(labels.size(0));
    }
    if (auto why = range.error()) {
      std::fprintf(stderr, "epoch %llu: %s\n", static_cast<unsigned long long>(e),
                   why->what().c_str());
      return 1;
    }
    std::printf("epoch %llu: %zu samples, mean loss %.4f\n", static_cast<unsigned long long>(e),
                samples, samples ? loss_sum / static_cast<double>(samples) : 0.0);
  }
  auto r = p->report();
  std::printf(
      "delivered %llu, quarantined %llu, duplicates %llu, lost %llu\n",
      static_cast<unsigned long long>(r.delivered), static_cast<unsigned long long>(r.quarantined),
      static_cast<unsigned long long>(r.duplicates), static_cast<unsigned long long>(r.lost));
  return r.duplicates == 0 && r.lost == 0 && !p->failure() ? 0 : 1;
}

// example-libtorch: trains a small CNN with libtorch on the batches of an embedded Conveyor
// pipeline. Each field of a batch becomes a torch tensor without a copy: torch::from_blob over
// the field's memory, with a deleter that gives the batch back to Conveyor when torch is done
// with the last of them.
//
//   example-libtorch TOPOLOGY.toml [key=value ...]
#include <ATen/DLConvertor.h>
#include <torch/torch.h>
#include <conveyor/pipeline.hpp>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

// Field `name` of the batch as a torch tensor over the same memory: any dtype and shape (a
// stacked field [N, ...]; a padded one [N, ...] at the batch's largest extents, each sample's
// own in field(name)->lengths; a ragged one [rows, ...], sample i at rows offsets[i] ..
// offsets[i + 1]). Each tensor holds the batch: its memory goes back to the pipeline when the
// last tensor (or view) of it is freed. On a CUDA feeder (device memory) torch frees a tensor
// before the kernels queued on it have run: synchronise torch's stream (or wait on an event
// recorded on it) before the last reference goes, so the feeder's next copy does not
// overwrite memory still being read. Debian's torch is CPU-only, where this cannot happen.
torch::Tensor field_tensor(const std::shared_ptr<conveyor::batch>& owner, std::string_view name) {
  auto f = owner->field(name);
  if (!f) {
    throw std::runtime_error("the batch has no field '" + std::string(name) + "'");
  }
  auto dl = conveyor::to_dlpack(f->type);
  auto device = f->device < 0 ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, f->device);
  return torch::from_blob(
      f->data, at::IntArrayRef(f->shape.data(), static_cast<std::size_t>(f->rank)),
      [owner](void*) {},
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
  // A set that names no classes (a WebDataset set, labels from its cls parts): a head of 1000.
  const auto classes = static_cast<std::int64_t>(info.classes() > 0 ? info.classes() : 1000);
  small_cnn model(classes);
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (std::uint64_t e = 0; e < p->epochs(); ++e) {
    double loss_sum = 0;
    std::size_t samples = 0;
    auto range = p->epoch(e, 0);
    for (auto& b : range) {
      samples += b.size();
      auto owner = std::make_shared<conveyor::batch>(std::move(b));
      auto labels = field_tensor(owner, "label").to(torch::kLong);
      if (labels.numel() > 0 &&
          (labels.min().item<std::int64_t>() < 0 || labels.max().item<std::int64_t>() >= classes)) {
        std::fprintf(stderr, "epoch %llu: a label outside 0 .. %lld in batch %llu\n",
                     static_cast<unsigned long long>(e), static_cast<long long>(classes - 1),
                     static_cast<unsigned long long>(owner->index()));
        return 1;
      }
      auto x = field_tensor(owner, "image");
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

// bench_h2d: host-to-device bandwidth of the CUDA feeder's ring (core/feeding/slot_ring.hpp)
// against the ceiling: a plain loop of cudaMemcpyAsync of the same bytes from one pinned buffer
// on one stream. Both move --batches batches of --batch x 3 x --height x --width --dtype
// elements; the median of --repeats runs is reported. Two feeder figures:
//   feeder:         acquire, submit, release once handed over (the ring, its events, the wait
//                   on each release and the completion polling alone);
//   feeder_writes:  as the CUDA feeder actor does, each sample is also written into its place
//                   in the pinned slot from ordinary memory first (overlapping earlier copies).
// Prints one JSON line on stdout; "ratio" = feeder / plain (target >= 0.9). Without a CUDA
// device it prints a "skipped" line and exits 0. Exit code 1: a CUDA call failed.
#include <cuda_runtime.h>

#include <cstring>

#include "apps/common/command_line.hpp"
#include "bench/cuda/feed_loop.hpp"
#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_check.hpp"

namespace {

using namespace conveyor;
using namespace conveyor::bench;

/// The ceiling: back-to-back copies of one pinned buffer into one device buffer.
double plain_copies(int device, std::size_t bytes, int batches) {
  auto stream = or_exit(cuda::cuda_stream::create(device));
  auto host = or_exit(cuda::pinned_buffer::allocate(device, bytes));
  auto dev = or_exit(cuda::device_buffer::allocate(device, bytes));
  std::memset(host.data(), 1, bytes);
  auto start = clock_type::now();
  for (int b = 0; b < batches; ++b) {
    or_exit(cuda::cuda_check(
        cudaMemcpyAsync(dev.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream.get()),
        "cudaMemcpyAsync", device));
  }
  or_exit(stream.synchronize());
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  batch_options opts;
  std::string type_name = "uint8";
  CLI::App app{"Host-to-device bandwidth: the CUDA feeder's ring vs plain pinned copies"};
  opts.add_to(app);
  app.add_option("--dtype", type_name, "sample element type")
      ->check(CLI::IsMember({"uint8", "float32"}));
  if (auto code = parse_command_line(app, argc, argv)) {
    return *code;
  }
  auto name = device_name("h2d", opts.device);
  if (!name) {
    return 0;
  }
  const auto type = type_name == "uint8" ? dtype::uint8 : dtype::float32;
  const auto layout = opts.layout(type);
  const auto bytes = layout.bytes;

  const double plain_s =
      median_seconds(opts.repeats, [&] { return plain_copies(opts.device, bytes, opts.batches); });

  auto ring = cuda_ring(opts.device, opts.slots, std::nullopt, dtype::float32);
  const double feeder_s =
      median_seconds(opts.repeats, [&] { return feed(*ring, layout, opts.batches, nullptr); });

  std::vector<std::vector<std::uint8_t>> samples(
      static_cast<std::size_t>(opts.batch), std::vector<std::uint8_t>(opts.sample_bytes(type), 3));
  const double writes_s = median_seconds(opts.repeats, [&] {
    return feed(*ring, layout, opts.batches, [&](ring_slot& slot, int i) {
      const auto& s = samples[static_cast<std::size_t>(i)];
      std::memcpy(slot.host() + static_cast<std::size_t>(i) * s.size(), s.data(), s.size());
    });
  });

  const double total = static_cast<double>(bytes) * opts.batches;
  const double plain_gbs = total / plain_s / 1e9;
  const double feeder_gbs = total / feeder_s / 1e9;
  const double writes_gbs = total / writes_s / 1e9;
  std::printf(
      "{\"bench\": \"h2d\", \"device\": \"%s\", \"batch_bytes\": %zu, \"batches\": %d, "
      "\"slots\": %zu, \"plain_gb_s\": %.2f, \"feeder_gb_s\": %.2f, \"feeder_writes_gb_s\": "
      "%.2f, \"ratio\": %.3f, \"ratio_with_writes\": %.3f}\n",
      name->c_str(), bytes, opts.batches, opts.slots, plain_gbs, feeder_gbs, writes_gbs,
      feeder_gbs / plain_gbs, writes_gbs / plain_gbs);
  return 0;
}

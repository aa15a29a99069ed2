#pragma once
/// What the CUDA benchmarks share: the device they run on, a batch shape on the command line,
/// and the feeding loop of a feeder's ring of slots over the CUDA engine with an instant
/// trainer (each batch is released, on the legacy default stream, as soon as it is handed over,
/// so the ring, not the trainer, bounds the rate).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/cuda_copy_engine.hpp"
#include "core/cuda/device_query.hpp"
#include "core/feeding/slot_ring.hpp"

namespace conveyor::bench {

using clock_type = std::chrono::steady_clock;

struct batch_options {
  int device = 0;
  int batch = 256;
  int height = 224;
  int width = 224;
  std::size_t slots = 3;  ///< pipeline.prefetch_batches + 1 with the default prefetch of 2
  int batches = 100;      ///< timed batches per repeat
  int repeats = 5;        ///< the median repeat is reported

  void add_to(CLI::App& app) {
    app.add_option("--device", device, "CUDA device id");
    app.add_option("--batch", batch, "samples per batch")->check(CLI::PositiveNumber);
    app.add_option("--height", height, "sample height")->check(CLI::PositiveNumber);
    app.add_option("--width", width, "sample width")->check(CLI::PositiveNumber);
    app.add_option("--slots", slots, "ring slots (prefetch_batches + 1)")
        ->check(CLI::PositiveNumber);
    app.add_option("--batches", batches, "timed batches per repeat")->check(CLI::PositiveNumber);
    app.add_option("--repeats", repeats, "repeats (the median is reported)")
        ->check(CLI::PositiveNumber);
  }
  /// Bytes of one 3 x height x width sample of `type`.
  std::size_t sample_bytes(dtype type) const {
    return std::size_t{3} * static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
           size_of(type);
  }
  /// A batch of `batch` such samples (the images a normalising ring normalises, when uint8).
  batch_layout layout(dtype type) const {
    return {sample_bytes(type) * static_cast<std::size_t>(batch),
            0,
            {batch, 3, height, width, pixel_layout::chw}};
  }
};

/// The device's name, or nullopt (with a JSON line saying why) when there is none to use:
/// then the benchmark has nothing to measure and exits 0.
inline std::optional<std::string> device_name(const char* bench, int device) {
  auto devices = cuda::list_devices();
  if (devices) {
    for (const auto& d : *devices) {
      if (d.id == device) {
        return d.name;
      }
    }
  }
  std::printf("{\"bench\": \"%s\", \"skipped\": \"no CUDA device %d: %s\"}\n", bench, device,
              devices ? "not present" : devices.error().what().c_str());
  return std::nullopt;
}

/// Exits with the error's text when `value` holds one: a benchmark has no way around it.
template <class T>
T or_exit(expected<T> value) {
  if (!value) {
    std::fprintf(stderr, "%s\n", value.error().what().c_str());
    std::exit(1);
  }
  return std::move(*value);
}
inline void or_exit(expected<void> ok) {
  if (!ok) {
    std::fprintf(stderr, "%s\n", ok.error().what().c_str());
    std::exit(1);
  }
}

/// A ring of `slots` slots over the CUDA engine of `device`, normalising as `normalize` says;
/// a failure of the ring ends the benchmark with its error.
inline std::shared_ptr<slot_ring> cuda_ring(int device, std::size_t slots,
                                            std::optional<normalize_coefficients> normalize,
                                            dtype out) {
  auto engine = or_exit(cuda::cuda_copy_engine::create(device));
  ring_options r;
  r.name = "bench feeder";
  r.slots = slots;
  r.normalize = normalize;
  r.normalized_type = out;
  r.on_failure = [](const error& e) {
    std::fprintf(stderr, "%s\n", e.what().c_str());
    std::exit(1);
  };
  return or_exit(slot_ring::create(std::move(engine), std::move(r)));
}

/// Writes sample `i` of a batch into the slot's pinned memory (may be empty: nothing written).
using sample_writer = std::function<void(ring_slot&, int i)>;

/// Batches a ring has handed over, for the feeding loop to wait on.
class handed_over {
 public:
  void add() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  /// Waits (at most a minute: then the benchmark fails) until `n` batches were handed over.
  void wait_for(std::uint64_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::minutes(1), [&] { return count_ >= n; })) {
      std::fprintf(stderr, "no batch handed over within a minute\n");
      std::exit(1);
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::uint64_t count_ = 0;
};

/// Feeds `batches` batches of `layout` through `ring` as the feeder actor does (acquire, write
/// each sample in place, submit), releasing each batch once handed over; returns the seconds
/// from the first acquire until the last batch is on the device.
inline double feed(slot_ring& ring, const batch_layout& layout, int batches,
                   const sample_writer& write) {
  handed_over delivered;
  std::deque<std::size_t> in_flight;
  std::uint64_t retired = 0;
  auto retire_oldest = [&] {
    delivered.wait_for(++retired);
    ring.released(in_flight.front(), consumer_stream{});
    or_exit(ring.reclaim(in_flight.front()));
    in_flight.pop_front();
  };
  auto start = clock_type::now();
  for (int b = 0; b < batches; ++b) {
    if (ring.free_slots() == 0) {
      retire_oldest();
    }
    auto* slot = or_exit(ring.acquire(layout, "batch " + std::to_string(b)));
    for (int i = 0; write && i < layout.images.samples; ++i) {
      write(*slot, i);
    }
    or_exit(ring.submit(*slot, [&delivered] { delivered.add(); }));
    in_flight.push_back(slot->index());
  }
  while (!in_flight.empty()) {
    retire_oldest();
  }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The median of `repeats` runs of `run` (seconds), after one untimed warm-up run.
inline double median_seconds(int repeats, const std::function<double()>& run) {
  run();
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    seconds.push_back(run());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace conveyor::bench

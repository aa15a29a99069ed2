#pragma once
/// What the CUDA benchmarks share: the device they run on, a batch shape on the command line,
/// and the feeding loop of a device_feeder with an instant trainer (each batch is released as
/// soon as it is complete, so the ring, not the trainer, bounds the rate).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/device_feeder.hpp"
#include "core/cuda/device_query.hpp"

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
  cuda::batch_layout layout(dtype type) const {
    return {type, batch, 3, height, width, pixel_layout::chw};
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

/// Writes sample `i` of a batch into the slot's pinned memory (may be empty: nothing written).
using sample_writer = std::function<void(cuda::feeder_slot&, int i)>;

/// Feeds `batches` batches of `layout` through `feeder` as the CUDA feeder does (acquire, write
/// each sample in place, submit), releasing each batch once complete; returns the seconds from
/// the first acquire until the last batch is on the device.
inline double feed(cuda::device_feeder& feeder, const cuda::batch_layout& layout, int batches,
                   const sample_writer& write) {
  std::deque<cuda::feeder_slot*> in_flight;
  auto retire_oldest = [&] {
    or_exit(feeder.wait(*in_flight.front()));
    or_exit(feeder.release(in_flight.front()->index()));
    in_flight.pop_front();
  };
  auto start = clock_type::now();
  for (int b = 0; b < batches; ++b) {
    if (feeder.free_slots() == 0) {
      retire_oldest();
    }
    auto* slot = or_exit(feeder.acquire(layout));
    for (int i = 0; write && i < layout.samples; ++i) {
      write(*slot, i);
    }
    or_exit(feeder.submit(*slot));
    in_flight.push_back(slot);
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

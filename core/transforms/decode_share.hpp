#pragma once
/// How the CPU and the GPU share the JPEGs of a decode step, by measured rates: images are
/// grouped by size (powers of two of their pixel count), and each group's images go to the
/// decoder that has taken less time per image of that size lately: the GPU for the large images
/// the CPU is slowest on, and more of them the less loaded the GPU is. Every group tries each
/// decoder a few times first, and every `explore_every`-th image of a group goes to the other
/// one, so that a change of load (the trainer's kernels on the same GPU, busier cores) moves
/// the share. After `give_up_after` GPU failures in a row (a device fault is sticky) every image
/// goes to the CPU for the rest of the run. Plain state: no clock, no CUDA; the decode step
/// measures and records.

#include <array>
#include <cstdint>
#include <mutex>

namespace conveyor {

class decode_share {
 public:
  enum class decoder : std::uint8_t { cpu, gpu };

  struct options {
    int first_tries = 3;     ///< per group and decoder, before the measurements decide
    int explore_every = 32;  ///< per group: one image in this many goes to the slower one
    double weight = 0.125;   ///< of a new measurement in a group's moving average
    int give_up_after = 16;  ///< GPU failures in a row after which the GPU takes nothing
  };

  /// What it did so far, for the logs and the tests.
  struct figures {
    std::int64_t cpu_images = 0;
    std::int64_t gpu_images = 0;
    std::int64_t gpu_busy = 0;      ///< every lane of the GPU was busy: the CPU decoded it
    std::int64_t gpu_declined = 0;  ///< the GPU does not take the JPEG: the CPU decoded it
    std::int64_t gpu_failed = 0;    ///< the GPU failed on it: the CPU did
    bool gpu_given_up = false;
  };

  decode_share() : decode_share(options{}) {}
  explicit decode_share(options o);

  /// The decoder for a JPEG of `pixels` pixels (width x height of the whole image). Thread-safe.
  decoder choose(std::int64_t pixels);

  /// `d` decoded a JPEG of `pixels` pixels in `ns` nanoseconds (wall time of the calling
  /// thread, the wait for the GPU included). Thread-safe.
  void record(decoder d, std::int64_t pixels, std::int64_t ns);

  /// The GPU declined or failed an image of `pixels` that choose() gave it; the CPU decodes it
  /// (and records that). A miss counts in its group as a GPU decode that took twice the CPU's
  /// time (0.1 s before the CPU has one), so that a group whose JPEGs the GPU does not take
  /// turns to the CPU until an exploration finds otherwise. `failed`: the device failed, not a
  /// decline (a JPEG it does not read); returns true when this failure made it give the GPU up.
  /// Thread-safe.
  bool gpu_missed(std::int64_t pixels, bool failed);

  /// Every lane of the GPU was busy with an image choose() gave it; the CPU decodes it. Not a
  /// measurement: the GPU takes what its lanes can, the CPU the rest, whatever the GPU's speed
  /// (counting it as a slow decode would turn a group the GPU is faster for to the CPU whenever
  /// threads outnumber lanes). Thread-safe.
  void gpu_busy();

  figures totals() const;
  int give_up_after() const noexcept { return options_.give_up_after; }

  /// The size group of an image of `pixels` pixels. Pure.
  static int group_of(std::int64_t pixels) noexcept;

 private:
  static constexpr int groups = 40;
  struct group {
    std::array<double, 2> mean_ns{0.0, 0.0};
    std::array<int, 2> measured{0, 0};
    std::int64_t chosen = 0;
  };

  decoder pick(group& g) const;
  void measure(group& g, decoder d, double ns) const;

  options options_;
  mutable std::mutex mutex_;
  std::array<group, groups> groups_{};
  figures totals_;
  int failures_in_a_row_ = 0;
};

}  // namespace conveyor

#pragma once
/// The GPU's side of a decode step (decode.on = "gpu" or "auto"): a JPEG goes to the GPU's
/// decoder (jpeg_offload.hpp) when the share (decode_share.hpp) says it finishes sooner there;
/// what the GPU declines or fails on, the CPU decodes. Both sides' times are measured here and
/// fed back to the share. A sample is never lost to the GPU: its failure is logged (throttled)
/// and the CPU's decode says what is wrong with the JPEG, if anything.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include <opencv2/core/mat.hpp>

#include "conveyor/error.hpp"
#include "core/base/log_throttle.hpp"
#include "core/base/monotonic_clock.hpp"
#include "core/transforms/decode_share.hpp"
#include "core/transforms/jpeg_offload.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// Shared by every thread that runs the step: thread-safe.
class offloaded_decode {
 public:
  /// The GPU decoder `spec` asks for: nullptr with on = "cpu", and with on = "auto" where it
  /// cannot open (logged once here); with on = "gpu" that is an error naming the key and why.
  static expected<std::shared_ptr<offloaded_decode>> open(const decode_spec& spec);

  offloaded_decode(std::shared_ptr<jpeg_offload> offload, decode_share::options share);
  /// Logs how the JPEGs were shared, where there were any: "decode: 812 JPEGs on nvJPEG ...,
  /// 5188 on the CPU; of these the GPU found every lane busy for 3100, declined 40, failed on
  /// 0".
  ~offloaded_decode();
  offloaded_decode(const offloaded_decode&) = delete;
  offloaded_decode& operator=(const offloaded_decode&) = delete;

  /// The requested pixels decoded by the GPU, when the share sends this JPEG there and the GPU
  /// takes it; nullopt: the caller decodes it, through decode_on_cpu.
  std::optional<cv::Mat> try_gpu(const std::uint8_t* data, std::size_t size,
                                 const offload_request& request, std::uint64_t sample_id);

  /// Runs `decode` (the CPU's decode of a JPEG of `pixels` pixels) and records its time.
  template <class Decode>
  auto decode_on_cpu(std::int64_t pixels, Decode&& decode) {
    auto start = now_ns();
    auto image = decode();
    if (image) {
      share_.record(decode_share::decoder::cpu, pixels, now_ns() - start);
    }
    return image;
  }

  decode_share::figures totals() const { return share_.totals(); }

  /// The pixels of the whole JPEG a request is for: the share's size groups. Pure.
  static std::int64_t pixels_of(const offload_request& request) noexcept {
    return std::int64_t{request.width} * request.height;
  }

 private:
  static std::int64_t now_ns() noexcept { return static_cast<std::int64_t>(monotonic_ns()); }
  void note_failure(const error& e, std::int64_t pixels, std::uint64_t sample_id);

  std::shared_ptr<jpeg_offload> offload_;
  decode_share share_;
  std::mutex log_mutex_;
  log_throttle failures_logged_{1};
};

}  // namespace conveyor

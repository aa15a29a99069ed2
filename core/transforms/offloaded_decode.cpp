#include "core/transforms/offloaded_decode.hpp"

#include <string>

#include "core/base/log.hpp"
#include "core/base/monotonic_clock.hpp"

namespace conveyor {

expected<std::shared_ptr<offloaded_decode>> offloaded_decode::open(const decode_spec& spec) {
  if (spec.on == decode_device::cpu) {
    return std::shared_ptr<offloaded_decode>{};
  }
  auto offload = open_jpeg_offload(spec.gpu, spec.gpu_lanes);
  if (!offload) {
    std::string why = "on = \"" + std::string(to_string(spec.on)) +
                      "\": no GPU decoder for CUDA device " + std::to_string(spec.gpu) + ": " +
                      offload.error().message();
    if (spec.on == decode_device::gpu) {
      return error{errc::invalid_argument, why};
    }
    log("decode")->warn("decode {}; JPEGs are decoded on the CPU", why);
    return std::shared_ptr<offloaded_decode>{};
  }
  log("decode")->info(
      "decode: JPEGs go to {} or to the CPU, whichever measures faster for their size",
      (*offload)->describe());
  return std::make_shared<offloaded_decode>(std::move(*offload), decode_share::options{});
}

offloaded_decode::offloaded_decode(std::shared_ptr<jpeg_offload> offload,
                                   decode_share::options share)
    : offload_(std::move(offload)), share_(share) {}

offloaded_decode::~offloaded_decode() {
  auto t = share_.totals();
  if (t.cpu_images + t.gpu_images == 0) {
    return;  // a chain built to validate a topology, or never run
  }
  try {
    log("decode")->info(
        "decode: {} JPEGs on {}, {} on the CPU; of these the GPU found every lane busy for {}, "
        "declined {}, failed on {}{}",
        t.gpu_images, offload_->describe(), t.cpu_images, t.gpu_busy, t.gpu_declined, t.gpu_failed,
        t.gpu_given_up ? " (it was given up)" : "");
  } catch (...) {  // NOLINT(bugprone-empty-catch): a failed log line must not end the process
  }
}

std::optional<cv::Mat> offloaded_decode::try_gpu(const std::uint8_t* data, std::size_t size,
                                                 const offload_request& request,
                                                 std::uint64_t sample_id) {
  auto pixels = pixels_of(request);
  if (share_.choose(pixels) != decode_share::decoder::gpu) {
    return std::nullopt;
  }
  auto start = now_ns();
  auto answer = offload_->decode(data, size, request);
  if (!answer) {
    // A JPEG the GPU's decoder will not read (damaged, outside the request) is the CPU's, as a
    // declined one is: only the device's own failures count towards giving it up.
    const errc code = answer.error().code();
    if (code == errc::decode_error || code == errc::invalid_argument) {
      share_.gpu_missed(pixels, false);
    } else {
      note_failure(answer.error(), pixels, sample_id);
    }
    return std::nullopt;
  }
  switch (answer->what) {
    case offload_result::outcome::decoded:
      share_.record(decode_share::decoder::gpu, pixels, now_ns() - start);
      return std::move(answer->image);
    case offload_result::outcome::busy:
      share_.gpu_busy();
      break;
    case offload_result::outcome::declined:
      share_.gpu_missed(pixels, false);
      break;
  }
  return std::nullopt;
}

void offloaded_decode::note_failure(const error& e, std::int64_t pixels, std::uint64_t sample_id) {
  bool gave_up = share_.gpu_missed(pixels, true);
  std::lock_guard lock(log_mutex_);
  std::uint64_t left_out = 0;
  if (gave_up) {
    log("decode")->error(
        "decode: {} failed {} times in a row, the last on sample {} ({}): "
        "every JPEG is decoded on the CPU from now on",
        offload_->describe(), share_.give_up_after(), sample_id, e.message());
  } else if (failures_logged_.allow(log_throttle::clock::now(), left_out)) {
    log("decode")->warn(
        "decode: {} failed on sample {} ({}); the CPU decodes it{}", offload_->describe(),
        sample_id, e.message(),
        left_out > 0 ? " (" + std::to_string(left_out) + " such lines left out)" : std::string());
  }
}

}  // namespace conveyor

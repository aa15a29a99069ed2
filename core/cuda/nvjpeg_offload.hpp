#pragma once
/// The GPU's JPEG decoder behind decode.on = "gpu" and "auto" (core/transforms/jpeg_offload.hpp):
/// nvJPEG's decoupled API, loaded at run time (nvjpeg_library.hpp). A JPEG's region is decoded
/// at full size (nvJPEG decodes only the MCUs the region covers; the JPEG engines, which decode
/// no region, decode the whole image and the region is cut from it), shrunk on the GPU by 2, 4
/// or 8 where the CPU would have decoded at that DCT scale (box_reduce_kernel.hpp), and copied
/// into a host image: the steps that follow see the size and region the CPU's decode would give.
///
/// nvJPEG's backends are tried in order for each JPEG, the first that says it takes the JPEG
/// decoding it: HARDWARE (the A100's and H100's JPEG engines: no CPU time but the parse; for a
/// region, only where the whole image is within max_gpu_pixels), GPU_HYBRID (Huffman decoding
/// on the GPU), HYBRID (Huffman on the calling thread: progressive JPEGs, ...).
/// CONVEYOR_NVJPEG_BACKENDS (e.g. "GPU_HYBRID,HYBRID") names the backends to use, in order. The
/// library handle is made for HARDWARE where the GPU has the engines, else the default, and with
/// NVJPEG_FLAGS_BITSTREAM_STRICT where nvJPEG takes it (without it, strict requests are declined).
/// A backend this nvJPEG or GPU lacks is left out when the decoder opens; one that reports "not
/// supported" for a JPEG passes it to the next; one that fails 3 times in a row on JPEGs it said it
/// takes (not the JPEG's fault, not memory) is logged and not used again. A JPEG none takes, and
/// one of other than 1 or 3 components (CMYK), is declined. `lanes` JPEGs are decoded at once, each
/// lane with its own nvJPEG states, buffers and CUDA stream; a caller that finds every lane busy is
/// answered `busy` at once, never queued; a caller waits for its pixels asleep (a blocking-sync
/// event), not spinning. Each lane keeps the device and pinned memory of the largest image it
/// decoded (up to 3 x max_gpu_pixels bytes of device memory for the decode, more for the reduced
/// copy and for nvJPEG's own buffers, which grow alike) until the decoder is closed.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/cuda/nvjpeg_library.hpp"
#include "core/transforms/jpeg_offload.hpp"

namespace conveyor::cuda {

/// One of nvJPEG's backends: its nvjpegBackend_t value and its name ("HARDWARE").
struct nvjpeg_backend_name {
  int kind = 0;
  const char* name = "";
};

/// The backends `list` names (CONVEYOR_NVJPEG_BACKENDS: "HARDWARE", "GPU_HYBRID", "HYBRID",
/// separated by commas), in its order; all three, in that order, where `list` is null or
/// empty. An unknown or repeated name is errc::invalid_argument naming the variable and the
/// choices. Pure.
expected<std::vector<nvjpeg_backend_name>> nvjpeg_backends_named(const char* list);

/// The largest region (in source pixels) the GPU decodes: a larger one is declined (the CPU
/// decodes it), so that no lane grows past 3 x this many bytes of the trainer's GPU memory.
inline constexpr std::int64_t max_gpu_pixels = std::int64_t{1} << 26;

class nvjpeg_offload final : public jpeg_offload {
 public:
  /// nvJPEG on `device` with `lanes` lanes (1..64), made now: errors name what is missing (the
  /// library, the device, an nvJPEG call and its status).
  static expected<std::shared_ptr<nvjpeg_offload>> open(int device, int lanes);

  ~nvjpeg_offload() override;
  nvjpeg_offload(const nvjpeg_offload&) = delete;
  nvjpeg_offload& operator=(const nvjpeg_offload&) = delete;

  /// Thread-safe (see jpeg_offload). Makes the device current on the calling thread for the
  /// call, and restores what was current.
  expected<offload_result> decode(const std::uint8_t* data, std::size_t size,
                                  const offload_request& request) override;
  std::string describe() const override;

  struct lane;        ///< one decode at a time: states, buffers, a stream (nvjpeg_offload.cpp)
  struct source_roi;  ///< the source pixels a request covers (nvjpeg_offload.cpp)

 private:
  nvjpeg_offload(const nvjpeg_library& library, int device);
  expected<void> make_handle();
  expected<void> make_backends();
  expected<void> make_lanes(int lanes);
  std::unique_ptr<lane> take_lane();
  void give_back(std::unique_ptr<lane> l);
  /// The lane's parsed JPEG (its parameters set, its buffers reserved) through the first
  /// backend that takes it.
  expected<offload_result> decode_parsed(lane& l, const offload_request& request,
                                         const source_roi& roi);
  /// The pixels `l` decodes for `roi` of its parsed JPEG at most: the whole image's where a
  /// usable JPEG engine takes that JPEG for a region (within max_gpu_pixels), else the
  /// region's. decode_parsed uses the engines for a region only where the lane's buffer holds
  /// the whole image.
  std::int64_t decoded_pixels(lane& l, const offload_request& request, const source_roi& roi) const;

  /// One of nvJPEG's backends, as this decoder uses it.
  struct backend {
    int kind = 0;           ///< nvjpeg::backend
    const char* name = "";  ///< "HARDWARE", for logs
    nvjpeg::decoder_t decoder = nullptr;
    std::atomic<bool> usable{true};  ///< false once it failed too often on JPEGs it takes
    std::atomic<int> failures_in_a_row{0};
  };
  static constexpr std::size_t max_backends = 3;
  /// Whether `b` is usable and says it takes `l`'s parsed JPEG with `params`.
  bool takes(const backend& b, lane& l, nvjpeg::params_t params) const;

  const nvjpeg_library& library_;
  int device_;
  int lanes_ = 0;
  nvjpeg::handle_t handle_ = nullptr;
  bool strict_ = false;  ///< the handle checks the bitstream (NVJPEG_FLAGS_BITSTREAM_STRICT)
  std::array<backend, max_backends> backends_;  ///< in the order they are tried
  std::size_t backend_count_ = 0;
  std::mutex mutex_;
  std::vector<std::unique_ptr<lane>> idle_;
};

/// Makes nvjpeg_offload the process's jpeg_offload_provider: one decoder per device, shared by
/// every chain that asks for it while one holds it (the first asker's lanes). Idempotent;
/// thread-safe.
void install_jpeg_offload();

}  // namespace conveyor::cuda

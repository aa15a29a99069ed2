#include "core/cuda/nvjpeg_offload.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "core/base/log.hpp"
#include "core/codecs/jpeg_decoder.hpp"
#include "core/cuda/box_reduce_kernel.hpp"
#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_event.hpp"
#include "core/cuda/cuda_stream.hpp"
#include "core/cuda/device_guard.hpp"
#include "core/cuda/device_query.hpp"

namespace conveyor::cuda {
namespace {

/// What to make of a status of nvjpegDecodeJpeg from one backend.
enum class verdict : std::uint8_t {
  jpegs_fault,   ///< damaged or truncated: the CPU decodes it and says what is wrong
  next_backend,  ///< this backend does not take this JPEG after all: the next one may
  no_memory,     ///< the device's memory, not the backend: an error, no blame
  backends_fault,
};

verdict judge(int status) {
  switch (status) {
    case nvjpeg::bad_jpeg:
    case nvjpeg::incomplete_bitstream:
      return verdict::jpegs_fault;
    case nvjpeg::jpeg_not_supported:
    case nvjpeg::implementation_not_supported:
      return verdict::next_backend;
    case nvjpeg::allocator_failure:
      return verdict::no_memory;
    default:
      return verdict::backends_fault;
  }
}

/// Whether nvJPEG blames the JPEG (damaged, of a kind it does not read), not itself or the
/// device.
bool jpegs_fault(int status) {
  return judge(status) == verdict::jpegs_fault || status == nvjpeg::jpeg_not_supported;
}

/// "CUDA device 0: nvjpegDecodeJpeg failed: NVJPEG_STATUS_BAD_JPEG"; errc::decode_error where
/// the JPEG is at fault, errc::device_error otherwise.
error nvjpeg_failure(int status, const char* call, int device) {
  return {jpegs_fault(status) ? errc::decode_error : errc::device_error,
          "CUDA device " + std::to_string(device) + ": " + call +
              " failed: " + nvjpeg::status_name(status)};
}

#define CONVEYOR_NVJPEG_TRY(device, call)                       \
  do {                                                          \
    if (int conveyor_status_ = (call); conveyor_status_ != 0) { \
      return nvjpeg_failure(conveyor_status_, #call, (device)); \
    }                                                           \
  } while (false)

/// A buffer (device or pinned) of at least `bytes`, grown (never shrunk) as images need.
template <class Buffer>
expected<void> reserve(Buffer& buffer, int device, std::size_t bytes) {
  if (buffer.size() >= bytes) {
    return {};
  }
  buffer = Buffer();  // the old one first: both need not fit at once
  auto grown = Buffer::allocate(device, bytes);
  if (!grown) {
    return std::move(grown).error();
  }
  buffer = std::move(*grown);
  return {};
}

/// The order backends are tried in by default: the JPEG engines, then Huffman on the GPU, then
/// on the CPU.
constexpr nvjpeg_backend_name backend_order[] = {
    {nvjpeg::hardware, "HARDWARE"}, {nvjpeg::gpu_hybrid, "GPU_HYBRID"}, {nvjpeg::hybrid, "HYBRID"}};

}  // namespace

expected<std::vector<nvjpeg_backend_name>> nvjpeg_backends_named(const char* list) {
  if (list == nullptr || *list == '\0') {
    return std::vector<nvjpeg_backend_name>(std::begin(backend_order), std::end(backend_order));
  }
  const std::string text = list;
  std::vector<nvjpeg_backend_name> chosen;
  for (std::size_t start = 0; start <= text.size();) {
    const auto end = std::min(text.find(',', start), text.size());
    const auto name = text.substr(start, end - start);
    const auto* found = std::find_if(std::begin(backend_order), std::end(backend_order),
                                     [&](const nvjpeg_backend_name& b) { return name == b.name; });
    const bool repeated =
        found != std::end(backend_order) &&
        std::any_of(chosen.begin(), chosen.end(),
                    [&](const nvjpeg_backend_name& b) { return b.kind == found->kind; });
    if (found == std::end(backend_order) || repeated) {
      return error{
          errc::invalid_argument,
          "CONVEYOR_NVJPEG_BACKENDS=" + text + ": \"" + name + "\" " +
              (repeated ? "is named twice" : "is not one of HARDWARE, GPU_HYBRID, HYBRID") +
              " (each at most once, separated by commas)"};
    }
    chosen.push_back(*found);
    start = end + 1;
  }
  return chosen;
}

struct nvjpeg_offload::source_roi {
  int left = 0;
  int top = 0;
  int width = 0;
  int height = 0;
  bool whole = false;  ///< the whole image: nvJPEG is asked for no region
};

namespace {

/// The source pixels `r` covers: its region scaled back up, clipped to the image.
expected<nvjpeg_offload::source_roi> roi_of(const offload_request& r) {
  const int k = r.reduce;
  const auto& g = r.region;
  if ((k != 1 && k != 2 && k != 4 && k != 8) || r.width < 1 || r.height < 1 || g.left < 0 ||
      g.top < 0 || g.width < 1 || g.height < 1 || g.left + g.width > reduced_length(r.width, k) ||
      g.top + g.height > reduced_length(r.height, k)) {
    return error{errc::invalid_argument,
                 "nvJPEG: region " + std::to_string(g.width) + "x" + std::to_string(g.height) +
                     "+" + std::to_string(g.left) + "+" + std::to_string(g.top) + " at 1/" +
                     std::to_string(k) + " is not inside a " + std::to_string(r.width) + "x" +
                     std::to_string(r.height) + " image"};
  }
  if (std::int64_t{r.width} * r.height > max_image_pixels) {
    return error{errc::decode_error, "nvJPEG: a " + std::to_string(r.width) + "x" +
                                         std::to_string(r.height) + " JPEG is over " +
                                         std::to_string(max_image_pixels) + " pixels"};
  }
  nvjpeg_offload::source_roi s;
  s.left = g.left * k;
  s.top = g.top * k;
  s.width = std::min(g.width * k, r.width - s.left);
  s.height = std::min(g.height * k, r.height - s.top);
  s.whole = s.left == 0 && s.top == 0 && s.width == r.width && s.height == r.height;
  return s;
}

}  // namespace

/// One decode at a time: a state per backend (sharing one pinned and one device buffer), the
/// parsed stream and parameters, a CUDA stream, an event the caller sleeps on, and the device
/// images (full size, reduced), grown as JPEGs need.
struct nvjpeg_offload::lane {
  const nvjpeg::api* api = nullptr;
  std::array<nvjpeg::state_t, max_backends> states{};
  nvjpeg::pinned_buffer_t pinned = nullptr;
  nvjpeg::device_buffer_t device_scratch = nullptr;
  nvjpeg::jpeg_stream_t jpeg = nullptr;
  nvjpeg::params_t params = nullptr;        ///< the request's region
  nvjpeg::params_t whole_params = nullptr;  ///< no region: the JPEG engines decode whole images
  cuda_stream stream;
  cuda_event done;
  device_buffer full;
  device_buffer reduced;
  pinned_buffer staging;  ///< the pixels on their way out, read into the host image

  lane() = default;
  lane(const lane&) = delete;
  lane& operator=(const lane&) = delete;
  ~lane() {
    // The stream's and event's owners release themselves; nvJPEG's objects go states first.
    for (auto* s : states) {
      if (s != nullptr) {
        api->JpegStateDestroy(s);
      }
    }
    if (jpeg != nullptr) {
      api->JpegStreamDestroy(jpeg);
    }
    for (auto* p : {params, whole_params}) {
      if (p != nullptr) {
        api->DecodeParamsDestroy(p);
      }
    }
    if (pinned != nullptr) {
      api->BufferPinnedDestroy(pinned);
    }
    if (device_scratch != nullptr) {
      api->BufferDeviceDestroy(device_scratch);
    }
  }
};

nvjpeg_offload::nvjpeg_offload(const nvjpeg_library& library, int device)
    : library_(library), device_(device) {}

nvjpeg_offload::~nvjpeg_offload() {
  auto guard = enter_for_release(device_);
  idle_.clear();
  for (std::size_t i = 0; i < backend_count_; ++i) {
    library_.api.DecoderDestroy(backends_[i].decoder);
  }
  if (handle_ != nullptr) {
    library_.api.Destroy(handle_);
  }
}

expected<std::shared_ptr<nvjpeg_offload>> nvjpeg_offload::open(int device, int lanes) {
  if (lanes < 1 || lanes > 64) {
    return error{errc::invalid_argument, "nvJPEG: lanes must be in [1, 64]"};
  }
  auto library = load_nvjpeg();
  if (!library) {
    return std::move(library).error();
  }
  if (auto ok = check_device(device, "nvjpegCreateEx"); !ok) {
    return std::move(ok).error();
  }
  auto guard = device_guard::enter(device);
  if (!guard) {
    return std::move(guard).error();
  }
  std::shared_ptr<nvjpeg_offload> offload(new nvjpeg_offload(**library, device));
  if (auto ok = offload->make_backends(); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = offload->make_lanes(lanes); !ok) {
    return std::move(ok).error();
  }
  return offload;
}

expected<void> nvjpeg_offload::make_handle() {
  // A handle made for HARDWARE serves the other backends too; without the JPEG engines
  // (ARCH_MISMATCH) the default handle. Strict where this nvJPEG takes the flag.
  int status = nvjpeg::success;
  for (int kind : {int{nvjpeg::hardware}, int{nvjpeg::backend_default}}) {
    for (unsigned flags : {nvjpeg::flag_bitstream_strict, 0U}) {
      status = library_.api.CreateEx(kind, nullptr, nullptr, flags, &handle_);
      if (status == nvjpeg::success) {
        strict_ = flags != 0;
        return {};
      }
    }
  }
  return nvjpeg_failure(status, "nvjpegCreateEx", device_);
}

expected<void> nvjpeg_offload::make_backends() {
  const auto& api = library_.api;
  if (auto ok = make_handle(); !ok) {
    return ok;
  }
  auto chosen = nvjpeg_backends_named(std::getenv("CONVEYOR_NVJPEG_BACKENDS"));
  if (!chosen) {
    return std::move(chosen).error();
  }
  std::string missing;
  for (const auto& b : *chosen) {
    nvjpeg::decoder_t decoder = nullptr;
    if (int status = api.DecoderCreate(handle_, b.kind, &decoder); status != nvjpeg::success) {
      missing += std::string(missing.empty() ? "" : ", ") + b.name + " (" +
                 nvjpeg::status_name(status) + ")";
      continue;
    }
    auto& slot = backends_[backend_count_++];
    slot.kind = b.kind;
    slot.name = b.name;
    slot.decoder = decoder;
  }
  if (backend_count_ == 0) {
    return error{errc::device_error,
                 "CUDA device " + std::to_string(device_) + ": nvJPEG has no backend: " + missing};
  }
  if (!missing.empty()) {
    log("decode")->info("nvJPEG on CUDA device {}: without {}", device_, missing);
  }
  return {};
}

expected<void> nvjpeg_offload::make_lanes(int lanes) {
  const auto& api = library_.api;
  for (int i = 0; i < lanes; ++i) {
    auto l = std::make_unique<lane>();
    l->api = &api;
    CONVEYOR_NVJPEG_TRY(device_, api.BufferPinnedCreate(handle_, nullptr, &l->pinned));
    CONVEYOR_NVJPEG_TRY(device_, api.BufferDeviceCreate(handle_, nullptr, &l->device_scratch));
    for (std::size_t b = 0; b < backend_count_; ++b) {
      CONVEYOR_NVJPEG_TRY(device_,
                          api.DecoderStateCreate(handle_, backends_[b].decoder, &l->states[b]));
      CONVEYOR_NVJPEG_TRY(device_, api.StateAttachPinnedBuffer(l->states[b], l->pinned));
      CONVEYOR_NVJPEG_TRY(device_, api.StateAttachDeviceBuffer(l->states[b], l->device_scratch));
    }
    CONVEYOR_NVJPEG_TRY(device_, api.JpegStreamCreate(handle_, &l->jpeg));
    for (auto* p : {&l->params, &l->whole_params}) {
      CONVEYOR_NVJPEG_TRY(device_, api.DecodeParamsCreate(handle_, p));
      CONVEYOR_NVJPEG_TRY(device_, api.DecodeParamsSetOutputFormat(*p, nvjpeg::rgbi));
    }
    auto stream = cuda_stream::create(device_);
    if (!stream) {
      return std::move(stream).error();
    }
    l->stream = std::move(*stream);
    auto done = cuda_event::create(device_, cuda_event::timing::off, cuda_event::waiting::sleep);
    if (!done) {
      return std::move(done).error();
    }
    l->done = std::move(*done);
    idle_.push_back(std::move(l));
  }
  lanes_ = lanes;
  return {};
}

std::unique_ptr<nvjpeg_offload::lane> nvjpeg_offload::take_lane() {
  std::lock_guard lock(mutex_);
  if (idle_.empty()) {
    return nullptr;
  }
  auto l = std::move(idle_.back());
  idle_.pop_back();
  return l;
}

void nvjpeg_offload::give_back(std::unique_ptr<lane> l) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(l));
}

bool nvjpeg_offload::takes(const backend& b, lane& l, nvjpeg::params_t params) const {
  int unsupported = 1;  // nvJPEG's convention: 0 means it takes the JPEG
  return b.usable.load(std::memory_order_relaxed) &&
         library_.api.DecoderJpegSupported(b.decoder, l.jpeg, params, &unsupported) ==
             nvjpeg::success &&
         unsupported == 0;
}

std::int64_t nvjpeg_offload::decoded_pixels(lane& l, const offload_request& request,
                                            const source_roi& roi) const {
  const std::int64_t whole = std::int64_t{request.width} * request.height;
  if (!roi.whole && whole <= max_gpu_pixels) {
    for (std::size_t b = 0; b < backend_count_; ++b) {
      if (backends_[b].kind == nvjpeg::hardware && takes(backends_[b], l, l.whole_params)) {
        return whole;
      }
    }
  }
  return std::int64_t{roi.width} * roi.height;
}

std::string nvjpeg_offload::describe() const {
  return "nvJPEG " + (library_.version.empty() ? std::string("?") : library_.version) +
         " on CUDA device " + std::to_string(device_) + " (" + std::to_string(lanes_) + " lanes)";
}

namespace {

/// The device pixels a decode left, shrunk by the request's factor and copied into a host
/// image through the lane's pinned staging buffer (reserved by the caller); the calling thread
/// sleeps on the lane's event meanwhile. `full` is the decoded region, in lane.full.
expected<cv::Mat> finish(nvjpeg_offload::lane& l, int device, const offload_request& request,
                         device_rgb full) {
  device_rgb out = full;
  if (request.reduce > 1) {
    const auto& g = request.region;
    out = {l.reduced.data(), g.width, g.height, 3 * static_cast<std::size_t>(g.width)};
    if (auto ok = launch_box_reduce(full, out, request.reduce, l.stream); !ok) {
      return std::move(ok).error();
    }
  }
  const std::size_t row = 3 * static_cast<std::size_t>(out.width);
  CONVEYOR_CUDA_TRY(device, cudaMemcpy2DAsync(l.staging.data(), row, out.data, out.pitch, row,
                                              static_cast<std::size_t>(out.height),
                                              cudaMemcpyDeviceToHost, l.stream.get()));
  if (auto ok = l.done.record(l.stream); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = l.done.synchronize(); !ok) {
    return std::move(ok).error();
  }
  cv::Mat image(out.height, out.width, CV_8UC3);  // continuous: the staged rows as they are
  std::memcpy(image.data, l.staging.data(), row * static_cast<std::size_t>(out.height));
  return image;
}

/// The buffers a decode needs in `l`, reserved before any backend is tried (a lack of memory
/// is no backend's fault): `full_pixels` decoded (the region's, or the whole image's where the
/// JPEG engines may decode it), the request's region reduced and staged.
expected<void> reserve_for(nvjpeg_offload::lane& l, int device, const offload_request& request,
                           std::int64_t full_pixels) {
  const auto full_bytes = 3 * static_cast<std::size_t>(full_pixels);
  const auto& g = request.region;
  const auto out_bytes = 3 * static_cast<std::size_t>(g.width) * g.height;
  if (auto ok = reserve(l.full, device, full_bytes); !ok) {
    return ok;
  }
  if (request.reduce > 1) {
    if (auto ok = reserve(l.reduced, device, out_bytes); !ok) {
      return ok;
    }
  }
  return reserve(l.staging, device, out_bytes);
}

constexpr int backend_failures_allowed = 3;

}  // namespace

expected<offload_result> nvjpeg_offload::decode_parsed(lane& l, const offload_request& request,
                                                       const source_roi& roi) {
  const auto& api = library_.api;
  std::optional<error> failed;
  for (std::size_t b = 0; b < backend_count_; ++b) {
    auto& candidate = backends_[b];
    // nvJPEG decodes no region on the JPEG engines: they decode the whole image, and the
    // region is cut from it on the GPU, where the lane holds the whole image (decoded_pixels).
    const bool engines = candidate.kind == nvjpeg::hardware;
    const auto whole_bytes = 3 * static_cast<std::size_t>(request.width) * request.height;
    auto* params = engines ? l.whole_params : l.params;
    if ((engines && !roi.whole && l.full.size() < whole_bytes) || !takes(candidate, l, params)) {
      continue;
    }
    const int decoded_width = engines ? request.width : roi.width;
    nvjpeg::image destination{};
    destination.channel[0] = l.full.data();
    destination.pitch[0] = 3 * static_cast<std::size_t>(decoded_width);
    const int status = api.DecodeJpeg(handle_, candidate.decoder, l.states[b], l.jpeg, &destination,
                                      params, l.stream.get());
    if (status == nvjpeg::success) {
      candidate.failures_in_a_row.store(0, std::memory_order_relaxed);
      const auto offset = engines ? destination.pitch[0] * roi.top + 3 * std::size_t(roi.left) : 0;
      auto image = finish(l, device_, request,
                          {l.full.data() + offset, roi.width, roi.height, destination.pitch[0]});
      if (!image) {
        return std::move(image).error();  // the kernel or the copy: the device's, no backend's
      }
      return offload_result{offload_result::outcome::decoded, std::move(*image)};
    }
    auto e = nvjpeg_failure(status, "nvjpegDecodeJpeg", device_);
    switch (judge(status)) {
      case verdict::jpegs_fault:
      case verdict::no_memory:
        return e;
      case verdict::next_backend:
        continue;
      case verdict::backends_fault:
        break;
    }
    if (candidate.failures_in_a_row.fetch_add(1) + 1 >= backend_failures_allowed &&
        candidate.usable.exchange(false)) {
      log("decode")->warn(
          "nvJPEG's {} backend on CUDA device {} failed {} times in a row, the "
          "last: {}; it is not used again",
          candidate.name, device_, backend_failures_allowed, e.message());
    }
    failed = std::move(e);
  }
  if (failed) {
    return std::move(*failed);
  }
  return offload_result{};  // no backend takes it: the CPU's
}

expected<offload_result> nvjpeg_offload::decode(const std::uint8_t* data, std::size_t size,
                                                const offload_request& request) {
  auto roi = roi_of(request);
  if (!roi) {
    return std::move(roi).error();
  }
  if (std::int64_t{roi->width} * roi->height > max_gpu_pixels || (request.strict && !strict_)) {
    return offload_result{};  // too much of the trainer's memory; damage it could not tell
  }
  auto l = take_lane();
  if (!l) {
    return offload_result{offload_result::outcome::busy, {}};  // the CPU takes it at once
  }
  // The lane goes back with its stream idle, whatever failed with work queued on it.
  struct returner {
    nvjpeg_offload* self;
    std::unique_ptr<lane>& l;
    ~returner() {
      (void)l->stream.synchronize();
      self->give_back(std::move(l));
    }
  } back{this, l};
  auto guard = device_guard::enter(device_);
  if (!guard) {
    return std::move(guard).error();
  }
  const auto& api = library_.api;
  CONVEYOR_NVJPEG_TRY(device_, api.JpegStreamParse(handle_, data, size, 0, 0, l->jpeg));
  unsigned width = 0;
  unsigned height = 0;
  unsigned components = 0;
  CONVEYOR_NVJPEG_TRY(device_, api.JpegStreamGetFrameDimensions(l->jpeg, &width, &height));
  CONVEYOR_NVJPEG_TRY(device_, api.JpegStreamGetComponentsNum(l->jpeg, &components));
  if (width != static_cast<unsigned>(request.width) ||
      height != static_cast<unsigned>(request.height)) {
    return error{errc::decode_error, "nvJPEG reads the JPEG as " + std::to_string(width) + "x" +
                                         std::to_string(height) + ", its header probe as " +
                                         std::to_string(request.width) + "x" +
                                         std::to_string(request.height)};
  }
  if (components != 1 && components != 3) {
    return offload_result{};  // CMYK, YCCK: the CPU converts them as it always has
  }
  if (roi->whole) {
    CONVEYOR_NVJPEG_TRY(device_, api.DecodeParamsSetROI(l->params, 0, 0, -1, -1));
  } else {
    CONVEYOR_NVJPEG_TRY(
        device_, api.DecodeParamsSetROI(l->params, roi->left, roi->top, roi->width, roi->height));
  }
  if (auto ok = reserve_for(*l, device_, request, decoded_pixels(*l, request, *roi)); !ok) {
    return std::move(ok).error();
  }
  return decode_parsed(*l, request, *roi);
}

void install_jpeg_offload() {
  static std::once_flag once;
  std::call_once(once, [] {
    set_jpeg_offload_provider([](int device, int lanes) -> expected<std::shared_ptr<jpeg_offload>> {
      static std::mutex mutex;
      static std::map<int, std::weak_ptr<nvjpeg_offload>> open;
      std::lock_guard lock(mutex);
      if (auto held = open[device].lock()) {
        return std::shared_ptr<jpeg_offload>(std::move(held));
      }
      auto made = nvjpeg_offload::open(device, lanes);
      if (!made) {
        return std::move(made).error();
      }
      open[device] = *made;
      return std::shared_ptr<jpeg_offload>(std::move(*made));
    });
  });
}

}  // namespace conveyor::cuda

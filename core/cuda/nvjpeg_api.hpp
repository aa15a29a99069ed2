#pragma once
/// The part of nvJPEG's C API (nvjpeg.h of CUDA 12 and 13) that the GPU's JPEG decoder uses,
/// declared here as a table of entry points: the library is loaded at run time
/// (nvjpeg_library.hpp), so neither a build nor a machine without it needs nvjpeg.h or
/// libnvjpeg (this project's build machine has neither). Names and values are nvJPEG's; the C
/// enums are passed as int, as the x86-64 C ABI passes them. Include only from core/cuda.

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>

namespace conveyor::cuda::nvjpeg {

/// nvjpegStatus_t.
enum status : int {
  success = 0,
  not_initialized = 1,
  invalid_parameter = 2,
  bad_jpeg = 3,
  jpeg_not_supported = 4,
  allocator_failure = 5,
  execution_failed = 6,
  arch_mismatch = 7,
  internal_error = 8,
  implementation_not_supported = 9,
  incomplete_bitstream = 10,
};

/// nvjpegBackend_t: hybrid decodes the Huffman code on the CPU, gpu_hybrid on the GPU,
/// hardware on the GPU's JPEG engines (A100, H100).
enum backend : int { backend_default = 0, hybrid = 1, gpu_hybrid = 2, hardware = 3 };

/// nvjpegOutputFormat_t: interleaved RGB in channel[0].
enum output_format : int { rgbi = 5 };

/// NVJPEG_FLAGS_BITSTREAM_STRICT: a JPEG that breaks the standard is an error, not decoded
/// with what is missing filled in.
constexpr unsigned flag_bitstream_strict = 1U << 2;

/// nvjpegImage_t.
struct image {
  unsigned char* channel[4];
  std::size_t pitch[4];
};

struct handle_st;
struct state_st;
struct decoder_st;
struct stream_st;
struct params_st;
struct pinned_buffer_st;
struct device_buffer_st;
using handle_t = handle_st*;
using state_t = state_st*;
using decoder_t = decoder_st*;
using jpeg_stream_t = stream_st*;
using params_t = params_st*;
using pinned_buffer_t = pinned_buffer_st*;
using device_buffer_t = device_buffer_st*;

/// The entry points, each looked up by its nvJPEG name (nvjpeg_library.cpp).
struct api {
  int (*GetProperty)(libraryPropertyType type, int* value);
  int (*CreateEx)(int backend, void* dev_allocator, void* pinned_allocator, unsigned flags,
                  handle_t* handle);
  int (*Destroy)(handle_t handle);
  int (*DecoderCreate)(handle_t handle, int backend, decoder_t* decoder);
  int (*DecoderDestroy)(decoder_t decoder);
  int (*DecoderStateCreate)(handle_t handle, decoder_t decoder, state_t* state);
  int (*JpegStateDestroy)(state_t state);
  int (*BufferPinnedCreate)(handle_t handle, void* allocator, pinned_buffer_t* buffer);
  int (*BufferPinnedDestroy)(pinned_buffer_t buffer);
  int (*BufferDeviceCreate)(handle_t handle, void* allocator, device_buffer_t* buffer);
  int (*BufferDeviceDestroy)(device_buffer_t buffer);
  int (*StateAttachPinnedBuffer)(state_t state, pinned_buffer_t buffer);
  int (*StateAttachDeviceBuffer)(state_t state, device_buffer_t buffer);
  int (*JpegStreamCreate)(handle_t handle, jpeg_stream_t* stream);
  int (*JpegStreamDestroy)(jpeg_stream_t stream);
  int (*JpegStreamParse)(handle_t handle, const unsigned char* data, std::size_t length,
                         int save_metadata, int save_stream, jpeg_stream_t stream);
  int (*JpegStreamGetFrameDimensions)(jpeg_stream_t stream, unsigned* width, unsigned* height);
  int (*JpegStreamGetComponentsNum)(jpeg_stream_t stream, unsigned* components);
  int (*DecodeParamsCreate)(handle_t handle, params_t* params);
  int (*DecodeParamsDestroy)(params_t params);
  int (*DecodeParamsSetOutputFormat)(params_t params, int format);
  int (*DecodeParamsSetROI)(params_t params, int x, int y, int width, int height);
  int (*DecoderJpegSupported)(decoder_t decoder, jpeg_stream_t stream, params_t params,
                              int* is_supported);
  int (*DecodeJpeg)(handle_t handle, decoder_t decoder, state_t state, jpeg_stream_t stream,
                    image* destination, params_t params, cudaStream_t cuda_stream);
};

/// "NVJPEG_STATUS_BAD_JPEG" and the like, for messages.
const char* status_name(int s) noexcept;

}  // namespace conveyor::cuda::nvjpeg

#include "api/gpu_decoding.hpp"

#if CONVEYOR_HAVE_CUDA
#include "core/cuda/nvjpeg_offload.hpp"
#endif

namespace conveyor {

void enable_gpu_decoding() {
#if CONVEYOR_HAVE_CUDA
  cuda::install_jpeg_offload();
#endif
}

}  // namespace conveyor

#pragma once
/// Makes the GPU's JPEG decoder (nvJPEG, core/cuda/nvjpeg_offload.hpp) available to
/// decode.on = "gpu" and "auto" in a CUDA build; nothing in a build without CUDA (there "gpu"
/// is refused and "auto" decodes on the CPU). Must come before a topology is loaded: loading
/// validates the transforms by building their chain, which opens the decoder. Idempotent;
/// thread-safe.

namespace conveyor {

void enable_gpu_decoding();

}  // namespace conveyor

#pragma once
/// A host call once a consumer's queued CUDA work has completed: how a node's client gives a
/// batch back after the trainer's asynchronous copy of it (cudaHostRegister'd shared memory
/// read by a cudaMemcpyAsync) instead of under it. No CUDA header needed to use it.

#include <functional>

#include "conveyor/error.hpp"

namespace conveyor::cuda {

/// Queues `then` on `stream` (a cudaStream_t; cudaStreamLegacy for the legacy default stream):
/// it runs once the work queued there so far has completed, on a thread of CUDA's, and must be
/// quick and make no CUDA call. False, with nothing queued, for a null stream: no stream named,
/// nothing to wait for (a trainer that copies from pageable memory, whose copy is done when it
/// returns, or one that does not use CUDA: nothing is initialised for it). The error (naming
/// the device and the call) of a stream CUDA refuses, e.g. after a fault.
expected<bool> call_when_done(void* stream, std::function<void()> then);

}  // namespace conveyor::cuda

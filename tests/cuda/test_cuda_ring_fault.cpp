// A fault of the trainer's own kernel leaves the device's context in a sticky error: the ring
// must surface it (from its next call, or from polling the batch in flight) as an error naming
// the CUDA device, the call and the batch, within its deadline, and never wait for ever
// (support/ring_fault.hpp). In a file of its own: after the fault, nothing else in this process
// can use the device. Skipped where there is no GPU.
#include "../support/ring_fault.hpp"
#include "cuda_kit.hpp"

namespace conveyor::testing {

using cuda_kits = ::testing::Types<cuda::testing::cuda_kit>;
INSTANTIATE_TYPED_TEST_SUITE_P(CudaEngine, RingFault, cuda_kits);

}  // namespace conveyor::testing

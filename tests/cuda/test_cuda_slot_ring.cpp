// The ring protocol (support/ring_protocol.hpp) over the CUDA engine, on the first GPU: the
// same tests as the host engine's (tests/test_slot_ring.cpp), with a trainer whose kernels run
// on a non-blocking stream of its own. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include "../support/ring_protocol.hpp"
#include "cuda_fixture.hpp"
#include "cuda_kit.hpp"

namespace conveyor::testing {

using cuda_kits = ::testing::Types<cuda::testing::cuda_kit>;
INSTANTIATE_TYPED_TEST_SUITE_P(CudaEngine, RingProtocol, cuda_kits);

TEST(CudaEngineChecks, AMissingDeviceIsAnErrorThatNamesIt) {
  const int missing = cuda::testing::missing_device();
  auto engine = cuda::make_cuda_engine(missing);
  ASSERT_FALSE(engine);
  EXPECT_NE(engine.error().message().find("CUDA device " + std::to_string(missing)),
            std::string::npos)
      << engine.error().what();
}

}  // namespace conveyor::testing

// The RAII owners of core/cuda: buffers, streams and events round-trip data through the device
// in stream order, report completion, and name the device and call when CUDA refuses.
#include <gtest/gtest.h>

#include <future>
#include <numeric>
#include <thread>

#include "core/cuda/cuda_buffer.hpp"
#include "core/cuda/cuda_event.hpp"
#include "core/cuda/cuda_stream.hpp"
#include "core/cuda/device_guard.hpp"
#include "core/cuda/stream_callback.hpp"
#include "cuda_fixture.hpp"
#include "trainer_kernels.hpp"

namespace conveyor::cuda {
namespace {

using testing::cuda_test;
class CudaResourcesOnDevice : public cuda_test {};

template <class T>
T ok_or_fail(expected<T> value) {
  EXPECT_TRUE(value) << value.error().what();
  return value ? std::move(*value) : T{};
}

template <class T>
std::string failure_of(const expected<T>& result) {
  return result ? std::string("(it succeeded)") : result.error().message();
}

TEST(CudaResources, ErrorsNameTheDeviceAndTheCall) {
  const int missing = testing::missing_device();
  for (const auto& message :
       {failure_of(device_buffer::allocate(missing, 64)),
        failure_of(pinned_buffer::allocate(missing, 64)), failure_of(cuda_stream::create(missing)),
        failure_of(cuda_event::create(missing))}) {
    EXPECT_NE(message.find("CUDA device " + std::to_string(missing) +
                           ": cudaSetDevice not made: no such device"),
              std::string::npos)
        << message;
  }
  // Refused before CUDA was asked: no API error for compute-sanitizer to report (issue 34).
  // (Without a driver every call returns cudaErrorInsufficientDriver.)
  if (testing::first_device()) {
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  }
}

// Issue 34: a guard restored "device 0" on a thread that had no CUDA context, which creates
// device 0's context in a process that uses only another GPU. It must leave none there.
TEST(CudaResources, AGuardLeavesAFreshThreadWithoutAContext) {
  auto device = testing::first_device();
  CONVEYOR_NEEDS_GPU(device);
  bool before = true;
  bool after = true;
  std::thread fresh([&] {
    before = thread_has_context();
    {
      auto guard = device_guard::enter(*device);
      ASSERT_TRUE(guard) << guard.error().what();
      EXPECT_TRUE(thread_has_context());
    }
    after = thread_has_context();
  });
  fresh.join();
  EXPECT_FALSE(before);
  EXPECT_FALSE(after) << "the guard left a context current on a thread that had none";
}

// Issue 34: a node's client released a batch at once whatever the stream, while the trainer's
// copy of it on that stream could still be queued. The release waits for the stream's work.
TEST_F(CudaResourcesOnDevice, ACallbackRunsOnceTheStreamsWorkHasCompleted) {
  auto stream = ok_or_fail(cuda_stream::create(device_));
  testing::host_flag flag;
  ASSERT_EQ(testing::launch_wait_for_host(stream.get(), flag.on_device()), cudaSuccess);
  std::promise<void> called;
  auto queued = call_when_done(stream.get(), [&] { called.set_value(); });
  ASSERT_TRUE(queued) << queued.error().what();
  ASSERT_TRUE(*queued);
  auto done = called.get_future();
  EXPECT_EQ(done.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "called while the stream's kernel still ran";
  flag.set();
  EXPECT_EQ(done.wait_for(std::chrono::minutes(1)), std::future_status::ready);
  ASSERT_TRUE(stream.synchronize());
}

TEST(CudaResources, NoCallbackIsQueuedWithoutAStream) {
  auto queued = call_when_done(nullptr, [] {});
  ASSERT_TRUE(queued) << queued.error().what();
  EXPECT_FALSE(*queued) << "no stream named: released at once, nothing initialised";
}

TEST(CudaResources, EmptyOwnersHoldNothing) {
  device_buffer none;
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.size(), 0u);
  cuda_stream no_stream;
  EXPECT_EQ(no_stream.get(), nullptr);
  cuda_event no_event;
  EXPECT_EQ(no_event.get(), nullptr);
}

TEST_F(CudaResourcesOnDevice, BuffersRoundTripThroughTheDeviceInStreamOrder) {
  constexpr std::size_t bytes = 3 << 20;
  auto stream = ok_or_fail(cuda_stream::create(device_));
  auto up = ok_or_fail(pinned_buffer::allocate(device_, bytes));
  auto down = ok_or_fail(pinned_buffer::allocate(device_, bytes));
  auto a = ok_or_fail(device_buffer::allocate(device_, bytes));
  auto b = ok_or_fail(device_buffer::allocate(device_, bytes));
  ASSERT_EQ(a.size(), bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    up.data()[i] = static_cast<std::uint8_t>(i * 7 + 3);
  }
  auto done = ok_or_fail(cuda_event::create(device_));
  ASSERT_EQ(cudaMemcpyAsync(a.data(), up.data(), bytes, cudaMemcpyHostToDevice, stream.get()),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream.get()),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(down.data(), b.data(), bytes, cudaMemcpyDeviceToHost, stream.get()),
            cudaSuccess);
  ASSERT_TRUE(done.record(stream));
  ASSERT_TRUE(done.synchronize());
  EXPECT_TRUE(ok_or_fail(done.ready()));
  EXPECT_TRUE(std::equal(up.data(), up.data() + bytes, down.data()));
}

void CUDART_CB wait_for_go(void* go) {
  static_cast<std::shared_future<void>*>(go)->wait();
}

TEST_F(CudaResourcesOnDevice, EventIsReadyOnlyOnceTheWorkBeforeItCompleted) {
  auto stream = ok_or_fail(cuda_stream::create(device_));
  auto event = ok_or_fail(cuda_event::create(device_));
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  // The stream stalls in a host function until the test says go: no timing involved.
  ASSERT_EQ(cudaLaunchHostFunc(stream.get(), wait_for_go, &started), cudaSuccess);
  ASSERT_TRUE(event.record(stream));
  EXPECT_FALSE(ok_or_fail(event.ready()));
  go.set_value();
  ASSERT_TRUE(event.synchronize());
  EXPECT_TRUE(ok_or_fail(event.ready()));
}

TEST_F(CudaResourcesOnDevice, TimingEventsMeasureAnInterval) {
  auto stream = ok_or_fail(cuda_stream::create(device_));
  auto start = ok_or_fail(cuda_event::create(device_, cuda_event::timing::on));
  auto end = ok_or_fail(cuda_event::create(device_, cuda_event::timing::on));
  auto memory = ok_or_fail(device_buffer::allocate(device_, 1 << 20));
  ASSERT_TRUE(start.record(stream));
  ASSERT_EQ(cudaMemsetAsync(memory.data(), 0, memory.size(), stream.get()), cudaSuccess);
  ASSERT_TRUE(end.record(stream));
  ASSERT_TRUE(end.synchronize());
  EXPECT_GE(ok_or_fail(cuda_event::elapsed_ms(start, end)), 0.0f);
}

TEST_F(CudaResourcesOnDevice, MovedOwnersKeepTheirMemoryAndTheSourceIsEmpty) {
  auto first = ok_or_fail(device_buffer::allocate(device_, 4096));
  auto* data = first.data();
  device_buffer second = std::move(first);
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(second.size(), 4096u);
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_EQ(second.device(), device_);
}

TEST_F(CudaResourcesOnDevice, GuardRestoresThePreviousDevice) {
  ASSERT_EQ(cudaSetDevice(device_), cudaSuccess);
  {
    auto guard = device_guard::enter(device_);
    ASSERT_TRUE(guard) << guard.error().what();
  }
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, device_);
}

}  // namespace
}  // namespace conveyor::cuda

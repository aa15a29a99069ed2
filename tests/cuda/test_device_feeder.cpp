// The device side of a feeder: a ring of slots whose samples are written into pinned memory in
// place, copied with one asynchronous copy (and normalised on the device when configured),
// completed in submission order, and reused only once released.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "core/cuda/device_feeder.hpp"
#include "core/transforms/normalize_batch.hpp"
#include "cuda_fixture.hpp"

namespace conveyor::cuda {
namespace {

using testing::cuda_test;
using testing::to_host;
class DeviceFeeder : public cuda_test {};

/// Completion callbacks append here, from CUDA's thread.
class completions {
 public:
  std::function<void()> note(std::size_t id) {
    return [this, id] {
      std::lock_guard<std::mutex> lock(mutex_);
      order_.push_back(id);
      changed_.notify_all();
    };
  }
  std::vector<std::size_t> wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return order_.size() >= n; });
    return order_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::size_t> order_;
};

batch_layout float_batch(int samples) {
  return {dtype::float32, samples, 3, 8, 5, pixel_layout::chw};
}

void fill(feeder_slot& slot, std::uint8_t seed) {
  for (int i = 0; i < slot.layout().samples; ++i) {
    std::memset(slot.sample(static_cast<std::size_t>(i)), seed + i, slot.layout().sample_bytes());
  }
}

device_feeder make(const device_feeder_options& options) {
  auto feeder = device_feeder::create(options);
  EXPECT_TRUE(feeder) << feeder.error().what();
  return std::move(*feeder);
}

TEST(DeviceFeederChecks, RefusesZeroSlotsAndAnUnknownOutputType) {
  device_feeder_options none;
  none.slots = 0;
  auto zero = device_feeder::create(none);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code(), errc::invalid_argument);
  device_feeder_options bytes;
  bytes.normalize = coefficients_of(normalize_spec{});
  bytes.normalized_type = dtype::uint8;
  auto wrong = device_feeder::create(bytes);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message().find("uint8"), std::string::npos);
}

TEST(DeviceFeederChecks, AMissingDeviceIsAnErrorThatNamesIt) {
  device_feeder_options options;
  options.device = testing::missing_device();
  auto feeder = device_feeder::create(options);
  ASSERT_FALSE(feeder);
  EXPECT_NE(feeder.error().message().find("CUDA device " + std::to_string(options.device)),
            std::string::npos)
      << feeder.error().message();
}

TEST_F(DeviceFeeder, SlotsCarrySamplesToTheDeviceAndCompleteInOrder) {
  auto feeder = make({device_, 3, std::nullopt, dtype::float32});
  completions done;
  std::vector<feeder_slot*> slots;
  for (std::size_t b = 0; b < 3; ++b) {
    auto slot = feeder.acquire(float_batch(4));
    ASSERT_TRUE(slot) << slot.error().what();
    fill(**slot, static_cast<std::uint8_t>(10 * b));
    ASSERT_TRUE(feeder.submit(**slot, done.note(b)));
    slots.push_back(*slot);
  }
  EXPECT_FALSE(feeder.acquire(float_batch(4))) << "every slot is in use";
  EXPECT_EQ(done.wait_for(3), (std::vector<std::size_t>{0, 1, 2}));
  for (std::size_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(feeder.ready(*slots[b]));
    EXPECT_TRUE(*feeder.ready(*slots[b]));
    auto out = slots[b]->output();
    EXPECT_EQ(out.type, dtype::float32);
    EXPECT_EQ(out.shape, (std::array<int, 4>{4, 3, 8, 5}));
    EXPECT_EQ(out.device, device_);
    auto bytes = to_host(out.data, float_batch(4).bytes());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      ASSERT_EQ(bytes[i], 10 * b + i / float_batch(1).bytes()) << "batch " << b << " byte " << i;
    }
  }
}

TEST_F(DeviceFeeder, AReleasedSlotComesBackOldestFirst) {
  auto feeder = make({device_, 2, std::nullopt, dtype::float32});
  auto a = feeder.acquire(float_batch(1));
  auto b = feeder.acquire(float_batch(1));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(feeder.submit(**a));
  ASSERT_TRUE(feeder.submit(**b));
  ASSERT_TRUE(feeder.release((*b)->index()));
  ASSERT_TRUE(feeder.release((*a)->index()));
  auto again = feeder.acquire(float_batch(1));
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->index(), (*b)->index());
  EXPECT_EQ(feeder.free_slots(), 1u);
  EXPECT_FALSE(feeder.release((*a)->index())) << "a free slot cannot be released";
  EXPECT_FALSE(feeder.release(7));
}

TEST_F(DeviceFeeder, SlotsGrowForALargerBatch) {
  auto feeder = make({device_, 1, std::nullopt, dtype::float32});
  auto small = feeder.acquire(float_batch(1));
  ASSERT_TRUE(small);
  ASSERT_TRUE(feeder.submit(**small));
  ASSERT_TRUE(feeder.release((*small)->index()));
  auto large = feeder.acquire(float_batch(64));
  ASSERT_TRUE(large);
  fill(**large, 1);
  ASSERT_TRUE(feeder.submit(**large));
  ASSERT_TRUE(feeder.wait(**large));
  auto bytes = to_host((*large)->output().data, float_batch(64).bytes());
  EXPECT_EQ(bytes.back(), 64);
}

TEST_F(DeviceFeeder, AnEmptyBatchCompletesInItsTurnWithNoData) {
  auto feeder = make({device_, 2, std::nullopt, dtype::float32});
  completions done;
  auto full = feeder.acquire(float_batch(2));
  ASSERT_TRUE(full);
  ASSERT_TRUE(feeder.submit(**full, done.note(0)));
  auto empty = feeder.acquire(float_batch(0));
  ASSERT_TRUE(empty);
  ASSERT_TRUE(feeder.submit(**empty, done.note(1)));
  EXPECT_EQ(done.wait_for(2), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ((*empty)->output().data, nullptr);
}

TEST_F(DeviceFeeder, AnEmptyBatchNeedsNoShapeWhenNormalising) {
  auto feeder = make({device_, 1, coefficients_of(normalize_spec{}), dtype::bfloat16});
  auto marker = feeder.acquire(batch_layout{});  // what an end-of-epoch marker carries
  ASSERT_TRUE(marker) << marker.error().what();
  ASSERT_TRUE(feeder.submit(**marker));
  ASSERT_TRUE(feeder.wait(**marker));
  EXPECT_EQ((*marker)->output().data, nullptr);
  EXPECT_EQ((*marker)->output().type, dtype::bfloat16);
}

TEST_F(DeviceFeeder, NormalisesUint8SamplesOnTheDeviceLikeTheCpuReference) {
  for (auto type : {dtype::float32, dtype::bfloat16}) {
    auto k = coefficients_of(normalize_spec{});
    auto feeder = make({device_, 2, k, type});
    batch_layout layout{dtype::uint8, 3, 3, 17, 11, pixel_layout::hwc};
    auto slot = feeder.acquire(layout);
    ASSERT_TRUE(slot) << slot.error().what();
    std::vector<std::uint8_t> host(layout.bytes());
    for (std::size_t i = 0; i < host.size(); ++i) {
      host[i] = static_cast<std::uint8_t>(i * 31);
      (*slot)->sample(0)[i] = host[i];  // samples lie one after another
    }
    ASSERT_TRUE(feeder.submit(**slot));
    ASSERT_TRUE(feeder.wait(**slot));
    auto out = (*slot)->output();
    EXPECT_EQ(out.type, type);
    uint8_batch_shape shape{3, 3, 17, 11, pixel_layout::hwc};
    std::vector<std::uint8_t> want(shape.elements() * size_of(type));
    ASSERT_TRUE(normalize_batch(host.data(), shape, k, type, want.data()));
    EXPECT_EQ(to_host(out.data, want.size()), want);  // same arithmetic: identical bits
  }
}

TEST_F(DeviceFeeder, NormalizeRefusesFloatSamples) {
  auto feeder = make({device_, 1, coefficients_of(normalize_spec{}), dtype::float32});
  auto slot = feeder.acquire(float_batch(1));
  ASSERT_FALSE(slot);
  EXPECT_NE(slot.error().message().find("to_uint8"), std::string::npos);
  EXPECT_EQ(feeder.free_slots(), 1u);
}

}  // namespace
}  // namespace conveyor::cuda

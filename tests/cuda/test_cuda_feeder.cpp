// The feeder actor over the CUDA engine: plans become device batches in the GPU's channel, in
// order; releasing a batch returns a credit with its sample count; normalisation on the GPU gives
// the CPU reference's values; a device CUDA cannot use fails the pipeline with an error naming it.
#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <condition_variable>
#include <mutex>

#include "actors/feeder.hpp"
#include "core/cuda/cuda_copy_engine.hpp"
#include "core/transforms/normalize_batch.hpp"
#include "cuda_fixture.hpp"

namespace conveyor {
namespace {

/// The credits a feeder sent, as (batches, samples), from a stand-in for the batcher.
class credit_log {
 public:
  void add(std::uint64_t batches, std::uint64_t samples) {
    std::lock_guard<std::mutex> lock(mutex_);
    credits_.emplace_back(batches, samples);
    changed_.notify_all();
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return credits_.size() >= n; });
    return credits_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> credits_;
};

// Only credits reach a batcher from a feeder: the stand-in handles just those (dynamically
// typed, as test code may be).
caf::behavior credit_sink(caf::event_based_actor* /*self*/, std::shared_ptr<credit_log> log) {
  return {[log](atoms::credit, std::int32_t /*gpu*/, std::uint64_t batches, std::uint64_t samples) {
    log->add(batches, samples);
  }};
}

// Fields label and image (3 x 6 x 4).
prepared_ptr sample(std::uint64_t id, host_array image) {
  auto s = std::make_shared<prepared_sample>();
  s->ticket.sample_id = id;
  s->key = "img_" + std::to_string(id) + ".jpg";
  auto label = host_array::uninitialized(dtype::int32, {});
  *label.data<std::int32_t>() = static_cast<std::int32_t>(id % 10);
  s->fields.push_back(std::move(label));
  s->fields.push_back(std::move(image));
  return s;
}

host_array filled(dtype type, std::uint8_t value) {
  auto t = host_array::zeros(type, {3, 6, 4});
  std::fill(t.bytes.begin(), t.bytes.end(), value);
  return t;
}

std::shared_ptr<const sample_schema> schema_of(dtype image) {
  sample_schema s;
  s.fields.push_back({"label", {field_kind::tensor, dtype::int32, 0, {}}, {}});
  s.fields.push_back({"image", {field_kind::tensor, image, 3, {3, 6, 4, 0}}, {}});
  return std::make_shared<const sample_schema>(std::move(s));
}

batch_plan plan_of(std::uint64_t index, std::vector<prepared_ptr> samples, bool last = false) {
  batch_plan p;
  p.index = index;
  p.samples = std::move(samples);
  p.last_in_epoch = last;
  return p;
}

class CudaFeederActor : public ::testing::Test {
 protected:
  feeder_actor spawn(int device, std::optional<normalize_spec> normalize = std::nullopt,
                     dtype normalized = dtype::float32) {
    feeder_options opts;
    opts.gpu = 0;
    opts.slots = 2;
    opts.schema = schema_of(normalize ? dtype::uint8 : dtype::float32);
    opts.batch_size = 2;
    opts.normalize_field = 1;
    opts.batcher = caf::actor_cast<batcher_actor>(sys_.spawn(credit_sink, credits_));
    opts.channel = channel_;
    opts.status = status_;
    opts.engine = [device] { return cuda::make_cuda_engine(device); };
    opts.own_thread = true;
    if (normalize) {
      opts.normalize = coefficients_of(*normalize);
    }
    opts.normalized_type = normalized;
    batcher_ = opts.batcher;
    return spawn_feeder(sys_, std::move(opts));
  }

  void TearDown() override {
    if (batcher_) {
      caf::anon_send_exit(batcher_, caf::exit_reason::user_shutdown);
    }
    if (feeder_) {
      caf::anon_send_exit(feeder_, caf::exit_reason::user_shutdown);
    }
    batcher_ = nullptr;
    feeder_ = nullptr;
  }

  caf::actor_system_config cfg_;
  caf::actor_system sys_{cfg_};
  std::shared_ptr<credit_log> credits_ = std::make_shared<credit_log>();
  std::shared_ptr<batch_channel> channel_ = std::make_shared<batch_channel>();
  std::shared_ptr<pipeline_status> status_ =
      std::make_shared<pipeline_status>(std::vector<std::shared_ptr<batch_channel>>{channel_});
  batcher_actor batcher_;
  feeder_actor feeder_;
};

TEST_F(CudaFeederActor, ADeviceCudaCannotUseFailsThePipelineNamingIt) {
  const int missing = cuda::testing::missing_device();
  feeder_ = spawn(missing);
  EXPECT_EQ(channel_->pop(), nullptr) << "a failed pipeline closes the channels";
  auto failure = status_->failure();
  ASSERT_TRUE(failure);
  EXPECT_NE(failure->message().find("CUDA device " + std::to_string(missing)), std::string::npos)
      << failure->message();
}

class CudaFeederOnDevice : public CudaFeederActor {
 protected:
  void SetUp() override {
    auto device = cuda::testing::first_device();
    CONVEYOR_NEEDS_GPU(device);
    device_ = *device;
  }
  int device_ = 0;
};

TEST_F(CudaFeederOnDevice, HandsDeviceBatchesInOrderAndCreditsOnRelease) {
  feeder_ = spawn(device_);
  EXPECT_EQ(credits_->wait_for(1).front(), std::make_pair(std::uint64_t{2}, std::uint64_t{0}));
  caf::anon_send(
      feeder_, atoms::batch::value,
      plan_of(0, {sample(1, filled(dtype::float32, 1)), sample(2, filled(dtype::float32, 2))}));
  caf::anon_send(feeder_, atoms::batch::value, plan_of(1, {}, true));
  auto first = channel_->pop();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index, 0u);
  EXPECT_EQ(first->device, device_);
  EXPECT_EQ(first->type_of(1), dtype::float32);
  EXPECT_EQ(first->fields[1].shape[0], 2);
  EXPECT_EQ(first->fields[1].shape[1], 3);
  EXPECT_EQ(first->fields[1].shape[2], 6);
  EXPECT_EQ(first->fields[1].shape[3], 4);
  EXPECT_EQ(first->keys, (std::vector<std::string>{"img_1.jpg", "img_2.jpg"}));
  EXPECT_EQ(first->labels, (std::vector<std::int32_t>{1, 2}));
  auto bytes = cuda::testing::to_host(first->values_of(1), 2 * 3 * 6 * 4 * 4);
  EXPECT_EQ(bytes.front(), 1);
  EXPECT_EQ(bytes.back(), 2);
  auto marker = channel_->pop();
  ASSERT_TRUE(marker);
  EXPECT_TRUE(marker->last_in_epoch);
  EXPECT_EQ(marker->size(), 0u);
  caf::anon_send(feeder_, atoms::release::value, first->slot);
  EXPECT_EQ(credits_->wait_for(2)[1], std::make_pair(std::uint64_t{1}, std::uint64_t{2}));
}

TEST_F(CudaFeederOnDevice, NormalisesUint8SamplesOnTheGpu) {
  feeder_ = spawn(device_, normalize_spec{}, dtype::bfloat16);
  auto t = host_array::zeros(dtype::uint8, {3, 6, 4});
  for (std::size_t i = 0; i < t.bytes.size(); ++i) {
    t.bytes[i] = static_cast<std::uint8_t>(i * 11);
  }
  caf::anon_send(feeder_, atoms::batch::value, plan_of(0, {sample(1, t)}));
  caf::anon_send(feeder_, atoms::batch::value, plan_of(1, {}, true));
  auto batch = channel_->pop();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->type_of(1), dtype::bfloat16);
  std::vector<std::uint8_t> want(t.element_count() * 2);
  ASSERT_TRUE(normalize_batch(t.bytes.data(), {1, 3, 6, 4, pixel_layout::chw},
                              coefficients_of(normalize_spec{}), dtype::bfloat16, want.data()));
  EXPECT_EQ(cuda::testing::to_host(batch->values_of(1), want.size()), want);
  auto marker = channel_->pop();
  ASSERT_TRUE(marker) << "the end-of-epoch marker passes too";
  EXPECT_TRUE(marker->last_in_epoch);
  EXPECT_FALSE(status_->failure());
}

}  // namespace
}  // namespace conveyor

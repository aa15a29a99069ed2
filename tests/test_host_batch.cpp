// Collation of a plan, as every feeder does it: the shape check, the metadata, and the samples
// written in place.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/delivery/host_batch.hpp"

namespace conveyor {
namespace {

prepared_ptr sample(std::uint64_t id, host_tensor tensor) {
  auto s = std::make_shared<prepared_sample>();
  s->ticket.sample_id = id;
  s->key = "img_" + std::to_string(id) + ".jpg";
  s->label = static_cast<std::int32_t>(id * 10);
  s->tensor = std::move(tensor);
  return s;
}

host_tensor filled(std::uint8_t value, int height = 2) {
  auto t = host_tensor::zeros(dtype::uint8, 3, height, 4);
  std::fill(t.bytes.begin(), t.bytes.end(), value);
  return t;
}

batch_plan plan_of(std::vector<prepared_ptr> samples) {
  batch_plan p;
  p.epoch = 2;
  p.index = 5;
  p.gpu = 1;
  p.samples = std::move(samples);
  return p;
}

TEST(HostBatch, DescribeAndWriteSamplesPutEachSampleInItsPlaceWithItsMetadata) {
  host_batch batch;
  auto plan = plan_of({sample(7, filled(1)), sample(8, filled(2))});
  ASSERT_TRUE(check_uniform(plan));
  describe_batch(plan, batch);
  batch.bytes.resize(48);
  write_samples(plan, batch.bytes.data());
  EXPECT_EQ(batch.epoch, 2u);
  EXPECT_EQ(batch.index, 5u);
  EXPECT_EQ(batch.gpu, 1);
  EXPECT_EQ(batch.type, dtype::uint8);
  EXPECT_EQ(batch.shape, (std::array<int, 4>{2, 3, 2, 4}));
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{70, 80}));
  EXPECT_EQ(batch.sample_ids, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_EQ(batch.keys, (std::vector<std::string>{"img_7.jpg", "img_8.jpg"}));
  ASSERT_EQ(batch.bytes.size(), 48u);
  EXPECT_EQ(batch.bytes[23], 1);
  EXPECT_EQ(batch.bytes[24], 2);
  EXPECT_EQ(batch.device, -1);
}

TEST(HostBatch, AnEmptyPlanMakesAnEmptyBatch) {
  host_batch batch;
  describe_batch(plan_of({sample(1, filled(1))}), batch);
  auto marker = plan_of({});
  marker.last_in_epoch = true;
  ASSERT_TRUE(check_uniform(marker));
  describe_batch(marker, batch);
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_TRUE(batch.labels.empty());
  EXPECT_EQ(batch.shape, (std::array<int, 4>{0, 0, 0, 0}));
  EXPECT_TRUE(batch.last_in_epoch);
}

TEST(HostBatch, ASampleOfAnotherShapeIsNamed) {
  auto plan = plan_of({sample(1, filled(1)), sample(2, filled(2, 3))});
  auto ok = check_uniform(plan);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code(), errc::invalid_config);
  EXPECT_NE(ok.error().message().find("img_2.jpg came out 3x3x4 uint8"), std::string::npos)
      << ok.error().message();
}

TEST(HostBatch, WriteSamplesFillsAnyDestination) {
  auto plan = plan_of({sample(1, filled(4)), sample(2, filled(5))});
  std::vector<std::uint8_t> dest(48, 0);
  write_samples(plan, dest.data());
  EXPECT_EQ(std::count(dest.begin(), dest.end(), 4), 24);
  EXPECT_EQ(dest.back(), 5);
}

}  // namespace
}  // namespace conveyor

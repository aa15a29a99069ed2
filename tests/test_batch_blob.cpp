// Collation of a plan's fields into one buffer, as every feeder does it (core/delivery/
// batch_blob.hpp): the layout's room per field, and each collate mode exact: stack (every
// sample in its place), pad (to the batch's largest extent, rounded to a multiple, filled with
// the value, with each sample's lengths) and ragged (rows one after another, with offsets);
// plus the batch's metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/delivery/host_batch.hpp"

namespace conveyor {
namespace {

host_array counting(dtype type, std::initializer_list<std::int64_t> shape, int from) {
  auto a = host_array::uninitialized(type, shape);
  for (std::size_t i = 0; i < a.element_count(); ++i) {
    if (type == dtype::float32) {
      a.data<float>()[i] = static_cast<float>(from + static_cast<int>(i));
    } else if (type == dtype::int32) {
      a.data<std::int32_t>()[i] = from + static_cast<int>(i);
    } else {
      a.bytes[i] = static_cast<std::uint8_t>(from + static_cast<int>(i));
    }
  }
  return a;
}

host_array label(std::int32_t value) {
  auto a = host_array::uninitialized(dtype::int32, {});
  *a.data<std::int32_t>() = value;
  return a;
}

prepared_ptr sample(std::uint64_t id, std::vector<host_array> fields) {
  auto s = std::make_shared<prepared_sample>();
  s->ticket.sample_id = id;
  s->key = "img_" + std::to_string(id) + ".jpg";
  s->fields = std::move(fields);
  return s;
}

batch_plan plan_of(std::vector<prepared_ptr> samples) {
  batch_plan p;
  p.epoch = 2;
  p.index = 5;
  p.gpu = 1;
  p.samples = std::move(samples);
  return p;
}

field_spec field(std::string name, dtype type, std::vector<std::int64_t> shape,
                 collate_spec c = {}) {
  field_spec f;
  f.name = std::move(name);
  f.type.type = type;
  f.type.rank = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), f.type.shape.begin());
  f.collate = c;
  return f;
}

struct collated {
  blob_layout layout;
  std::vector<std::uint8_t> buffer;
  std::vector<batch_field> fields;

  template <class T>
  const T* values(std::size_t i) const {
    return reinterpret_cast<const T*>(buffer.data() + fields[i].values);
  }
};

collated collate(const sample_schema& schema, const batch_plan& plan, std::uint64_t batch_size) {
  collated out;
  auto layout = blob_layout::make(schema, batch_size);
  EXPECT_TRUE(layout) << layout.error().what();
  out.layout = *layout;
  out.buffer.assign(out.layout.bytes, 0xEE);
  out.fields = collate_batch(plan, schema, out.layout, out.buffer.data());
  return out;
}

TEST(BatchBlob, StackedFieldsLieOneSampleAfterAnotherWithTheirMetadata) {
  sample_schema schema{{field("label", dtype::int32, {}), field("image", dtype::uint8, {3, 2, 4})}};
  auto plan = plan_of({sample(7, {label(70), counting(dtype::uint8, {3, 2, 4}, 0)}),
                       sample(8, {label(80), counting(dtype::uint8, {3, 2, 4}, 100)})});
  auto c = collate(schema, plan, 4);
  ASSERT_EQ(c.fields.size(), 2u);
  EXPECT_EQ(c.fields[0].rank, 1);
  EXPECT_EQ(c.fields[0].shape[0], 2);
  EXPECT_EQ(c.values<std::int32_t>(0)[1], 80);
  EXPECT_EQ(c.fields[1].rank, 4);
  EXPECT_EQ((std::array<std::int64_t, 4>{c.fields[1].shape[0], c.fields[1].shape[1],
                                         c.fields[1].shape[2], c.fields[1].shape[3]}),
            (std::array<std::int64_t, 4>{2, 3, 2, 4}));
  EXPECT_EQ(c.values<std::uint8_t>(1)[23], 23);
  EXPECT_EQ(c.values<std::uint8_t>(1)[24], 100);
  EXPECT_EQ(c.fields[1].values % 64, 0u) << "each field's values on a cache line";
  EXPECT_GE(c.layout.fields[1].value_bytes, 4u * 24) << "room for the batch size";

  host_batch batch;
  describe_batch(plan, schema, batch);
  EXPECT_EQ(batch.epoch, 2u);
  EXPECT_EQ(batch.index, 5u);
  EXPECT_EQ(batch.gpu, 1);
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{70, 80}));
  EXPECT_EQ(batch.sample_ids, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_EQ(batch.keys, (std::vector<std::string>{"img_7.jpg", "img_8.jpg"}));
}

TEST(BatchBlob, PaddedFieldsTakeTheBatchsLongestRoundedUpFilledWithTheValue) {
  collate_spec pad;
  pad.mode = collate_mode::pad;
  pad.multiple = 4;
  pad.value = -1.5;
  pad.max_shape = {9, 2};
  sample_schema schema{{field("features", dtype::float32, {varies, 2}, pad)}};
  auto plan = plan_of({sample(1, {counting(dtype::float32, {3, 2}, 0)}),
                       sample(2, {counting(dtype::float32, {5, 2}, 100)})});
  auto c = collate(schema, plan, 3);
  const auto& f = c.fields[0];
  EXPECT_EQ(f.rank, 3);
  EXPECT_EQ(f.shape[0], 2);
  EXPECT_EQ(f.shape[1], 8) << "5 rounded up to a multiple of 4";
  EXPECT_EQ(f.shape[2], 2);
  EXPECT_EQ(f.length_axes, 1);
  const auto* lengths = reinterpret_cast<const std::int32_t*>(c.buffer.data() + f.lengths);
  EXPECT_EQ(lengths[0], 3);
  EXPECT_EQ(lengths[1], 5);
  const auto* v = c.values<float>(0);
  for (int row = 0; row < 8; ++row) {
    for (int col = 0; col < 2; ++col) {
      const float first = row < 3 ? static_cast<float>(row * 2 + col) : -1.5F;
      const float second = row < 5 ? static_cast<float>(100 + row * 2 + col) : -1.5F;
      EXPECT_EQ(v[row * 2 + col], first) << "sample 0 " << row << "," << col;
      EXPECT_EQ(v[16 + row * 2 + col], second) << "sample 1 " << row << "," << col;
    }
  }
  EXPECT_GE(c.layout.fields[0].value_bytes, 3u * 12 * 2 * 4) << "max_shape 9 rounds to 12";
}

TEST(BatchBlob, AnImagePaddedInBothAxesKeepsEachRowInPlace) {
  collate_spec pad;
  pad.mode = collate_mode::pad;
  pad.multiple = 32;
  pad.max_shape = {3, 64, 64};
  sample_schema schema{{field("image", dtype::uint8, {3, varies, varies}, pad)}};
  auto plan = plan_of({sample(1, {counting(dtype::uint8, {3, 5, 7}, 1)}),
                       sample(2, {counting(dtype::uint8, {3, 33, 2}, 0)})});
  auto c = collate(schema, plan, 2);
  const auto& f = c.fields[0];
  EXPECT_EQ(f.shape[2], 64);
  EXPECT_EQ(f.shape[3], 32);
  EXPECT_EQ(f.length_axes, 2);
  const auto* lengths = reinterpret_cast<const std::int32_t*>(c.buffer.data() + f.lengths);
  EXPECT_EQ((std::vector<std::int32_t>(lengths, lengths + 4)),
            (std::vector<std::int32_t>{5, 7, 33, 2}));
  const auto* v = c.values<std::uint8_t>(0);
  // Sample 0, channel 2, row 4, column 6: element (2 * 5 + 4) * 7 + 6 of the sample, + 1.
  EXPECT_EQ(v[(2 * 64 + 4) * 32 + 6], static_cast<std::uint8_t>((2 * 5 + 4) * 7 + 6 + 1));
  EXPECT_EQ(v[(2 * 64 + 4) * 32 + 7], 0) << "padding";
  EXPECT_EQ(v[(2 * 64 + 5) * 32 + 0], 0) << "padding";
}

TEST(BatchBlob, RaggedFieldsLieRowAfterRowWithOffsets) {
  collate_spec ragged;
  ragged.mode = collate_mode::ragged;
  ragged.max_values = 10;
  sample_schema schema{{field("boxes", dtype::float32, {varies, 4}, ragged)}};
  auto plan = plan_of({sample(1, {counting(dtype::float32, {2, 4}, 0)}),
                       sample(2, {host_array::uninitialized(dtype::float32, {0, 4})}),
                       sample(3, {counting(dtype::float32, {3, 4}, 50)})});
  auto c = collate(schema, plan, 3);
  const auto& f = c.fields[0];
  EXPECT_EQ(f.rank, 2);
  EXPECT_EQ(f.shape[0], 5) << "rows of all samples";
  EXPECT_EQ(f.shape[1], 4);
  const auto* offsets = reinterpret_cast<const std::int64_t*>(c.buffer.data() + f.offsets);
  EXPECT_EQ((std::vector<std::int64_t>(offsets, offsets + 4)),
            (std::vector<std::int64_t>{0, 2, 2, 5}));
  EXPECT_EQ(c.values<float>(0)[7], 7.0F);
  EXPECT_EQ(c.values<float>(0)[8], 50.0F);
  EXPECT_EQ(c.values<float>(0)[19], 61.0F);
}

// max_values bounds one sample: a batch whose every sample has that many rows (each fits, so
// none was quarantined) lies inside the layout. Per batch, four such samples ran 3x past the
// field's room into the next field and the slot's end (a crafted set's boxes, a Python
// dataset's long strings).
TEST(BatchBlob, ABatchOfSamplesAtTheirMostRaggedRowsFitsItsLayout) {
  collate_spec ragged;
  ragged.mode = collate_mode::ragged;
  ragged.max_values = 3;
  sample_schema schema{
      {field("boxes", dtype::float32, {varies, 4}, ragged), field("label", dtype::int32, {})}};
  std::vector<prepared_ptr> samples;
  for (int i = 0; i < 4; ++i) {
    auto boxes = counting(dtype::float32, {3, 4}, 100 * i);
    ASSERT_FALSE(unfit_for_batch(schema.fields[0], boxes));
    samples.push_back(sample(static_cast<std::uint64_t>(i), {std::move(boxes), label(7 + i)}));
  }
  auto one_more_row = counting(dtype::float32, {4, 4}, 0);
  auto why = unfit_for_batch(schema.fields[0], one_more_row);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("max_values 3"), std::string::npos) << *why;

  auto layout = blob_layout::make(schema, 4);  // checked before anything is written into it
  ASSERT_TRUE(layout) << layout.error().what();
  const auto& room = layout->fields[0];
  ASSERT_GE(room.value_bytes, 4u * 3u * 4u * sizeof(float)) << "room for every sample's rows";
  ASSERT_LE(room.values + room.value_bytes, layout->fields[1].values);
  auto c = collate(schema, plan_of(std::move(samples)), 4);
  EXPECT_EQ(c.fields[0].shape[0], 12) << "rows of all samples";
  EXPECT_EQ(c.values<float>(0)[47], 311.0F) << "the last sample's last value, in its place";
  EXPECT_EQ(c.values<std::int32_t>(1)[3], 10) << "the next field, not overwritten";
}

TEST(BatchBlob, AnEmptyPlanDescribesEmptyFields) {
  sample_schema schema{{field("label", dtype::int32, {})}};
  auto marker = plan_of({});
  marker.last_in_epoch = true;
  auto c = collate(schema, marker, 4);
  ASSERT_EQ(c.fields.size(), 1u);
  EXPECT_EQ(c.fields[0].samples, 0u);
  EXPECT_EQ(c.fields[0].elements(), 0u);
  host_batch batch;
  describe_batch(marker, schema, batch);
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_TRUE(batch.last_in_epoch);
}

TEST(BatchBlob, FieldsThatCannotBeLaidOutAreNamed) {
  auto expect_refused = [](const field_spec& f, const std::string& says) {
    auto layout = blob_layout::make({{f}}, 4);
    ASSERT_FALSE(layout) << says;
    EXPECT_EQ(layout.error().code(), errc::invalid_config);
    EXPECT_NE(layout.error().message().find(says), std::string::npos) << layout.error().what();
  };
  expect_refused(field("audio", dtype::float32, {varies}), "field 'audio'");
  collate_spec pad;
  pad.mode = collate_mode::pad;
  expect_refused(field("audio", dtype::float32, {varies, 80}, pad), "max_shape");
  collate_spec ragged;
  ragged.mode = collate_mode::ragged;
  expect_refused(field("boxes", dtype::float32, {varies, 4}, ragged), "max_values");
  ragged.max_values = 8;
  expect_refused(field("id", dtype::int32, {}, ragged), "a scalar cannot be ragged");
  expect_refused(field("x", dtype::float32, {varies, varies}, ragged), "first axis only");
  ragged.max_values = std::numeric_limits<std::int64_t>::max();  // times 4 samples: wraps
  expect_refused(field("boxes", dtype::float32, {varies, 4}, ragged), "past 1 TiB");
  pad.max_shape = {std::int64_t{1} << 40, 80};
  expect_refused(field("audio", dtype::float32, {varies, 80}, pad), "past 1 TiB");
  ragged.max_values = std::int64_t{1} << 33;  // 512 GiB of boxes for 4 samples: each fits
  auto half = field("boxes", dtype::float32, {varies, 4}, ragged);
  auto two = blob_layout::make({{half, half}}, 4);
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message().find("together take more than 1 TiB"), std::string::npos)
      << two.error().what();
}

TEST(BatchBlob, ASampleThatDoesNotFitItsFieldIsNamedBeforeItIsBatched) {
  auto stacked = field("image", dtype::uint8, {3, 4, 4});
  EXPECT_FALSE(unfit_for_batch(stacked, host_array::zeros(dtype::uint8, {3, 4, 4})));
  auto why = unfit_for_batch(stacked, host_array::zeros(dtype::uint8, {3, 5, 4}));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("field 'image' came out uint8 [3, 5, 4]"), std::string::npos) << *why;
  collate_spec pad;
  pad.mode = collate_mode::pad;
  pad.max_shape = {6};
  auto padded = field("audio", dtype::float32, {varies}, pad);
  EXPECT_FALSE(unfit_for_batch(padded, host_array::zeros(dtype::float32, {6})));
  EXPECT_TRUE(unfit_for_batch(padded, host_array::zeros(dtype::float32, {7})));
  EXPECT_TRUE(unfit_for_batch(padded, host_array::zeros(dtype::int32, {2})));
}

}  // namespace
}  // namespace conveyor

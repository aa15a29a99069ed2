// The header of a served feed's shared-memory region (core/serving/feed_layout.hpp), as a
// client reads it from a node it does not have to trust: what a node writes decodes as it was
// written, and sizes that would wrap are refused.
#include <gtest/gtest.h>

#include <cstring>

#include "core/serving/feed_layout.hpp"

namespace conveyor {
namespace {

sample_schema one_label() {
  field_spec label;
  label.name = "label";
  label.type.type = dtype::int32;
  return sample_schema{{label}};
}

template <class T>
void put(std::vector<std::uint8_t>& header, std::size_t at, T value) {
  std::memcpy(header.data() + at, &value, sizeof value);  // the header is little-endian, as x86
}

TEST(FeedLayout, AHeaderDecodesAsItsNodeWroteIt) {
  const auto layout = feed_layout::make(4, 1, 4096, default_key_bytes(4));
  auto header = encode_feed_header(layout, 3, one_label());
  ASSERT_TRUE(header) << header.error().what();
  auto d = decode_feed_header(header->data(), layout.region_bytes(3));
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_EQ(d->slots, 3u);
  EXPECT_EQ(d->layout.slot_bytes, layout.slot_bytes);
  EXPECT_EQ(d->layout.region_bytes(3), layout.region_bytes(3));
  ASSERT_EQ(d->schema.fields.size(), 1u);
  EXPECT_EQ(d->schema.fields[0].name, "label");
}

// 2^31 slots of 8 GiB: their product is 2^64, which wrapped to 0, and the header's own size
// then "fit" a region (a sparse memfd) of 1 TiB: the client would have addressed slots far
// past its mapping.
TEST(FeedLayout, SlotsWhoseSizeWrapsAreRefused) {
  const auto layout = feed_layout::make(4, 1, 4096, default_key_bytes(4));
  auto header = encode_feed_header(layout, 3, one_label());
  ASSERT_TRUE(header) << header.error().what();
  put<std::uint32_t>(*header, 12, 1U << 31);                // slots
  put<std::uint64_t>(*header, 16, std::uint64_t{1} << 33);  // slot_bytes
  auto d = decode_feed_header(header->data(), std::size_t{1} << 40);
  ASSERT_FALSE(d) << "accepted " << d->slots << " slots of " << d->layout.slot_bytes;
  EXPECT_NE(d.error().message().find("do not fit the region"), std::string::npos)
      << d.error().what();
}

}  // namespace
}  // namespace conveyor

// libFuzzer target: arbitrary bytes as what an object store or the AWS shared files say: an
// S3 answer's fields (error Code and Message, a listing's Contents, Key and Size, an UploadId),
// a listing page as the listing reads it, a 206's Content-Range, and a credentials or config
// file. They must give fields, none or an error, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/remote/aws_profiles.hpp"
#include "core/remote/content_range.hpp"
#include "core/remote/object_listing.hpp"
#include "core/remote/xml_fields.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)xml_text(text, "Code");
  (void)xml_text(text, "Message");
  (void)xml_text(text, "UploadId");
  for (auto contents : xml_elements(text, "Contents")) {
    (void)xml_texts(contents, "Key");
    (void)xml_text(contents, "Size");
  }
  if (auto page = parse_listing_page(text, "s3://fuzz/prefix")) {
    object_listing listing("s3://fuzz/prefix", listing_bounds{4, 64});
    (void)listing.add(*page);
    (void)listing.add(std::move(*page));  // a token given again
  }
  if (auto range = parse_content_range(text)) {
    if (range->last < range->first || (range->complete && range->last >= *range->complete)) {
      __builtin_trap();  // parsed, but not a satisfied range
    }
    (void)content_range_mismatch(text, range->first, range->last - range->first + 1);
  }
  (void)content_range_mismatch(text, 0, 1);
  (void)aws::parse_profile_file(text, "fuzz/credentials", false);
  (void)aws::parse_profile_file(text, "fuzz/config", true);
  return 0;
}

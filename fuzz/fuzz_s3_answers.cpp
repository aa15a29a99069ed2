// libFuzzer target: arbitrary bytes as what an object store or the AWS shared files say: an
// S3 answer's fields (error Code and Message, a listing's Contents, Key and Size, an UploadId)
// and a credentials or config file. They must give fields, none or an error, never crash, hang
// or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/remote/aws_profiles.hpp"
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
  (void)aws::parse_profile_file(text, "fuzz/credentials", false);
  (void)aws::parse_profile_file(text, "fuzz/config", true);
  return 0;
}

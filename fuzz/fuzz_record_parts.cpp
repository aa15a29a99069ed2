// libFuzzer target: arbitrary bytes as a multipart record's part container. Parsing must
// refuse what lies, never crash or read out of bounds; what parses must encode back to the
// same bytes, and find_part and label_of_parts must work on it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/storage/record_parts.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  record r{"fuzz/key.bin", 0, {data, data + size}, true};
  auto parts = parts_of(r);
  if (!parts) {
    return 0;
  }
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> copy;
  for (const auto& p : *parts) {
    copy.emplace_back(std::string(p.name), std::vector<std::uint8_t>(p.data, p.data + p.size));
  }
  if (encode_parts(copy) != r.payload) {
    std::abort();  // the container is canonical: parse then encode gives the same bytes
  }
  (void)find_part(*parts, "jpg;jpeg;png;cls");
  (void)label_of_parts(*parts);
  return 0;
}

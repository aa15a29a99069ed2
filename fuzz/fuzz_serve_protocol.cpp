// libFuzzer target: arbitrary bytes as a serving control message (what a client or a node
// receives from its peer). Decoding must return an error or a message that encodes back to the
// same bytes; never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/serving/serve_protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = conveyor::serve::decode(data, size);
  if (m && conveyor::serve::encode(*m) != std::vector<std::uint8_t>(data, data + size)) {
    std::abort();  // a message that decodes must re-encode to itself
  }
  return 0;
}

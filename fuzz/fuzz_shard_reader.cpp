// libFuzzer target: arbitrary bytes as a shard (version 1 or 2). Opening, random reads,
// streaming and parsing the parts of what reads must return errors, never crash, hang or read
// out of bounds.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/storage/record_parts.hpp"
#include "core/storage/shard_reader.hpp"
#include "core/storage/shard_stream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  auto reader = shard_reader::open(make_memory_source({data, data + size}, "fuzz.cvs"));
  if (!reader) {
    return 0;
  }
  auto n = std::min<std::uint64_t>(reader->size(), 64);
  for (std::uint64_t i = 0; i <= n; ++i) {
    if (auto r = reader->read(i)) {
      (void)parts_of(*r);
    }
  }
  shard_stream stream(*reader, 512);
  for (std::uint64_t i = 0; i <= n; ++i) {
    auto r = stream.next();
    if (r && !r->has_value()) {
      break;
    }
  }
  return 0;
}

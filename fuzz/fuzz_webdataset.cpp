// libFuzzer target: arbitrary bytes as a WebDataset tar. Walking the headers, grouping the
// members into samples, reading and checking every sample must return errors, never crash,
// hang or read out of bounds; every sample read must be a part container that parses.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/storage/record_parts.hpp"
#include "core/storage/webdataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  // Two tars of the same bytes: every key is a duplicate, then a second pass reads the first
  // half alone.
  auto tar = [&](std::size_t n, const char* name) {
    return make_memory_source({data, data + n}, name);
  };
  for (auto tars : {std::vector<std::shared_ptr<const byte_source>>{tar(size, "a.tar")},
                    std::vector<std::shared_ptr<const byte_source>>{tar(size / 2, "b.tar"),
                                                                    tar(size, "c.tar")}}) {
    auto set = webdataset::open(std::move(tars));
    if (!set) {
      continue;
    }
    auto n = std::min<std::uint64_t>(set->size(), 64);
    for (std::uint64_t id = 0; id <= n; ++id) {
      auto r = set->read(id);
      if (!r) {
        continue;
      }
      if (!r->multipart || !parts_of(*r) || r->payload.size() != set->payload_size(id) ||
          !set->check(id, *r)) {
        std::abort();  // a sample that reads must be whole and pass its own check
      }
    }
  }
  return 0;
}

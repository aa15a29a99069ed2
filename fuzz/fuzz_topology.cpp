// libFuzzer target: arbitrary bytes as a topology. Loading must return a topology or an
// error, never throw, crash or hang. An input that starts with "--set\n" is override lines
// instead ("key.path=value", one per line), applied to a valid base topology, so that the
// schema walk behind a valid document is explored too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/load_topology.hpp"

namespace {

constexpr std::string_view base_topology = R"(gpus = "auto"
[dataset]
path = "build/sample/shards"
[pipeline]
batch_size = 64
preprocessors = "auto"
[batching]
policy = "in_order"
[supervision]
backoff_min_ms = 10
[faults]
crash_reader = 0
[[transform]]
op = "decode"
[[transform]]
op = "random_resized_crop"
size = 224
[[transform]]
op = "flip"
p = 0.5
[[transform]]
op = "normalize"
mean = [0.485, 0.456, 0.406]
std = [0.229, 0.224, 0.225]
)";

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    auto end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view override_marker = "--set\n";
  if (bytes.substr(0, override_marker.size()) == override_marker) {
    auto node = load_topology_string(base_topology, "base.toml",
                                     lines_of(bytes.substr(override_marker.size())));
    if (node) {
      (void)describe(*node);
    }
    return 0;
  }
  auto node = load_topology_string(bytes, "fuzz.toml");
  if (node) {
    (void)describe(*node);
  }
  return 0;
}

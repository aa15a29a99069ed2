#include "core/python/sampler_order.hpp"

#include "core/base/bounded_file.hpp"
#include "core/base/little_endian.hpp"
#include "core/base/memory_bound.hpp"

namespace conveyor {

expected<std::vector<std::uint64_t>> read_sampler_order(const std::string& path,
                                                        std::uint64_t length) {
  auto bytes = read_bounded_file(path, machine_memory_bytes());
  if (!bytes) {
    return bytes.error();
  }
  if (bytes->empty() || bytes->size() % 8 != 0) {
    return error{errc::invalid_config,
                 path + ": " + std::to_string(bytes->size()) +
                     " bytes, not a sampler's order (8 bytes an index, at least one)"};
  }
  std::vector<std::uint64_t> order(bytes->size() / 8);
  const auto* in = reinterpret_cast<const std::uint8_t*>(bytes->data());
  for (std::size_t j = 0; j < order.size(); ++j) {
    order[j] = little_endian::load<std::uint64_t>(in + 8 * j);
    if (order[j] >= length) {
      return error{errc::invalid_config,
                   path + ": position " + std::to_string(j) + " holds " + std::to_string(order[j]) +
                       ", past the dataset (len(dataset) is " + std::to_string(length) + ")"};
    }
  }
  return order;
}

}  // namespace conveyor

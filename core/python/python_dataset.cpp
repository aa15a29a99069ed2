#include "core/python/python_dataset.hpp"

#include "core/base/little_endian.hpp"

namespace conveyor {

std::string python_dataset::locate(std::uint64_t id) const {
  return "dataset[" + std::to_string(id < size() ? index_of(id) : id) + "]";
}

expected<record> python_dataset::read(std::uint64_t id) const {
  if (id >= size()) {
    return error{errc::not_found, "sample " + std::to_string(id) + " is out of range (" +
                                      std::to_string(size()) + " samples an epoch)"};
  }
  record r;
  r.key = locate(id);
  r.payload.resize(8);
  little_endian::store(r.payload.data(), index_of(id));
  return r;
}

}  // namespace conveyor

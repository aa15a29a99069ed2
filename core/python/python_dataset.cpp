#include "core/python/python_dataset.hpp"

namespace conveyor {

std::string python_dataset::locate(std::uint64_t id) const {
  return "dataset[" + std::to_string(id) + "]";
}

expected<record> python_dataset::read(std::uint64_t id) const {
  if (id >= size_) {
    return error{errc::not_found,
                 locate(id) + " is out of range (len(dataset) is " + std::to_string(size_) + ")"};
  }
  record r;
  r.key = locate(id);
  return r;
}

}  // namespace conveyor

#include "core/batching/flight_table.hpp"

#include <algorithm>

namespace conveyor {
namespace {

bool held_by(const flight& f, worker_role role, int index) {
  switch (role) {
    case worker_role::reader:
      // Not handed off yet: still at the reader, or at a preprocessor it was read for (the
      // caller tells them apart by attempt; a duplicate attempt's result is ignored as stale).
      return !f.handed_off && f.reader == index;
    case worker_role::preprocessor:
      return !f.handed_off && f.worker == index;
    case worker_role::straggler:
      return f.straggler == index;
  }
  return false;
}

}  // namespace

flight* flight_table::find(std::uint64_t attempt) {
  auto it = flights_.find(attempt);
  return it == flights_.end() ? nullptr : &it->second;
}

std::optional<flight> flight_table::finish(std::uint64_t attempt) {
  auto it = flights_.find(attempt);
  if (it == flights_.end()) {
    return std::nullopt;
  }
  auto out = it->second;
  flights_.erase(it);
  return out;
}

std::vector<flight> flight_table::take_held_by(worker_role role, int index,
                                               std::uint64_t first_attempt) {
  std::vector<flight> out;
  for (auto it = flights_.begin(); it != flights_.end();) {
    if (it->first >= first_attempt && held_by(it->second, role, index)) {
      out.push_back(it->second);
      it = flights_.erase(it);
    } else {
      ++it;
    }
  }
  // Oldest first, so re-issued samples keep their order.
  std::sort(out.begin(), out.end(),
            [](const flight& a, const flight& b) { return a.ticket.attempt < b.ticket.attempt; });
  return out;
}

}  // namespace conveyor

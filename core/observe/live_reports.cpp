#include "core/observe/live_reports.hpp"

namespace conveyor {

std::string actor_role(const std::string& name) {
  const auto dash = name.rfind('-');
  return dash == std::string::npos ? name : name.substr(0, dash);
}

void live_reports::update(const actor_report& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  latest_[r.name] = r;
}

std::vector<actor_report> live_reports::snapshot() const {
  std::vector<actor_report> out;
  std::lock_guard<std::mutex> lock(mutex_);
  out.reserve(latest_.size());
  for (const auto& [name, r] : latest_) {
    out.push_back(r);
  }
  return out;
}

}  // namespace conveyor

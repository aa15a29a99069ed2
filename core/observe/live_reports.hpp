#pragma once
/// The last report of every actor (messages/monitor.hpp), kept by the monitor for readers on
/// other threads: the metrics endpoint's /metrics and its live page.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "messages/monitor.hpp"

namespace conveyor {

/// An actor's role from its name: "preprocessor-3" -> "preprocessor", "batcher" -> "batcher".
std::string actor_role(const std::string& name);

/// Thread-safe.
class live_reports {
 public:
  /// `r` replaces the report of the actor it names.
  void update(const actor_report& r);
  /// A copy of the last report of every actor that reported, ordered by name.
  std::vector<actor_report> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, actor_report> latest_;  ///< guarded by mutex_
};

}  // namespace conveyor

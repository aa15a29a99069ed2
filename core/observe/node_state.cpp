#include "core/observe/node_state.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "core/observe/live_reports.hpp"

namespace conveyor {
namespace {

nlohmann::json actors_json(const std::vector<actor_report>& reports) {
  auto out = nlohmann::json::array();
  for (const auto& r : reports) {
    out.push_back({{"name", r.name},
                   {"role", actor_role(r.name)},
                   {"mailbox", r.mailbox},
                   {"items", r.items},
                   {"rate", r.items_per_s},
                   {"p50_ms", static_cast<double>(r.p50_us) / 1e3},
                   {"p90_ms", static_cast<double>(r.p90_us) / 1e3},
                   {"p99_ms", static_cast<double>(r.p99_us) / 1e3}});
  }
  return out;
}

// The trainers and their waits: a served node's trainer processes, else one per GPU channel.
nlohmann::json trainers_json(const pipeline_status& status, int gpus, const client_waits* clients) {
  auto out = nlohmann::json::array();
  if (clients != nullptr) {
    for (const auto& c : clients->snapshot()) {
      out.push_back({{"name", "job " + std::to_string(c.job) + " rank " + std::to_string(c.rank)},
                     {"wait_s", c.seconds}});
    }
    return out;
  }
  for (int g = 0; g < gpus; ++g) {
    out.push_back({{"name", "trainer-" + std::to_string(g)},
                   {"wait_s", std::chrono::duration<double>(status.channel(g)->waited()).count()}});
  }
  return out;
}

}  // namespace

std::string render_state_json(const pipeline_status& status, int gpus,
                              const std::vector<actor_report>& reports, const client_waits* clients,
                              double seconds) {
  const auto f = status.figures();
  nlohmann::json doc{{"seconds", seconds},
                     {"actors", actors_json(reports)},
                     {"delivered", f.totals.delivered},
                     {"quarantined", f.totals.quarantined},
                     {"in_flight", f.in_flight},
                     {"trainers", trainers_json(status, gpus, clients)},
                     {"diagnosis", status.diagnosis()},
                     {"failed", status.failure().has_value()}};
  // Names and texts may hold any byte a dataset gave them: invalid UTF-8 is replaced, never
  // thrown on.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace conveyor

#include "python/run_views.hpp"

#include "python/module_errors.hpp"

namespace conveyor_python {

namespace {
constexpr const char* state_key = "conveyor_state";
}  // namespace

py::dict report_dict(const conveyor::pipeline_report& r) {
  py::dict sample_ms;
  for (const auto& [name, ms] : r.sample_ms) {
    sample_ms[py::str(name)] = ms;
  }
  using py::arg;
  return py::dict(arg("delivered") = r.delivered, arg("quarantined") = r.quarantined,
                  arg("filtered") = r.filtered, arg("duplicates") = r.duplicates,
                  arg("lost") = r.lost, arg("steps_executed") = r.steps_executed,
                  arg("retries") = r.retries, arg("restarts") = r.restarts,
                  arg("handoffs") = r.handoffs, arg("hangs") = r.hangs,
                  arg("finished") = r.finished, arg("sample_ms") = sample_ms);
}

py::dict state_dict(const conveyor::run_state& state) {
  py::dict d;
  d[state_key] = py::bytes(reinterpret_cast<const char*>(state.bytes.data()), state.bytes.size());
  return d;
}

conveyor::run_state state_from(const py::object& state, const std::string& caller,
                               const std::string& maker) {
  conveyor::run_state out;
  if (state.is_none()) {
    return out;
  }
  py::object bytes = state;
  if (py::isinstance<py::dict>(state)) {
    auto d = state.cast<py::dict>();
    if (!d.contains(state_key)) {
      raise_usage(caller + ": state has no \"conveyor_state\" key (pass what " + maker +
                  ".state_dict() returned)");
    }
    bytes = d[state_key];
  }
  if (!py::isinstance<py::bytes>(bytes)) {
    raise_usage(caller + ": state must be a " + maker + ".state_dict() or its bytes");
  }
  auto text = bytes.cast<std::string>();
  out.bytes.assign(text.begin(), text.end());
  if (out.bytes.empty()) {
    raise_usage(caller + ": state is empty (not a " + maker + ".state_dict())");
  }
  return out;
}

}  // namespace conveyor_python

#include "core/transforms/step_registry.hpp"

#include <map>
#include <mutex>
#include <stdexcept>

#include "core/transforms/transform_spec.hpp"

namespace conveyor {
namespace {

struct registry {
  std::mutex mutex;
  std::map<std::string, step_factory, std::less<>> factories;
};

registry& the_registry() {
  static registry r;
  return r;
}

}  // namespace

bool is_builtin_op(std::string_view op) {
  return default_spec(op).has_value();
}

void register_step(std::string name, step_factory factory) {
  if (name.empty() || is_builtin_op(name)) {
    throw std::invalid_argument("register_step: '" + name +
                                "' is a built-in step's name (or empty): choose another");
  }
  if (!factory) {
    throw std::invalid_argument("register_step: '" + name + "' has no factory");
  }
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  r.factories[std::move(name)] = std::move(factory);
}

std::optional<step_factory> find_registered_step(std::string_view name) {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.factories.find(name);
  if (it == r.factories.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::vector<std::string> registered_step_names() {
  auto& r = the_registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const auto& [name, factory] : r.factories) {
    out.push_back(name);
  }
  return out;
}

}  // namespace conveyor

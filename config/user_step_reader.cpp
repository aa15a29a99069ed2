#include "config/user_step_reader.hpp"

#include <exception>
#include <utility>
#include <vector>

#include "core/transforms/step_registry.hpp"

namespace conveyor::config_detail {
namespace {

/// An array of numbers or of strings (an empty one reads as strings: step_params::numbers
/// takes it too); nullopt for any other array.
std::optional<step_params::value> array_value(const toml::array& array) {
  if (array.empty() || array.is_homogeneous(toml::node_type::string)) {
    std::vector<std::string> out;
    for (const auto& v : array) {
      out.push_back(*v.value<std::string>());
    }
    return step_params::value{std::move(out)};
  }
  std::vector<double> out;
  for (const auto& v : array) {
    if (!v.is_number()) {
      return std::nullopt;
    }
    out.push_back(*v.value<double>());
  }
  return step_params::value{std::move(out)};
}

std::optional<step_params::value> param_value(const toml::node& v) {
  if (auto b = v.value_exact<bool>()) {
    return step_params::value{*b};
  }
  if (auto i = v.value_exact<std::int64_t>()) {
    return step_params::value{*i};
  }
  if (auto d = v.value_exact<double>()) {
    return step_params::value{*d};
  }
  if (auto s = v.value_exact<std::string>()) {
    return step_params::value{*s};
  }
  if (const auto* a = v.as_array()) {
    return array_value(*a);
  }
  return std::nullopt;
}

/// The table's parameters; nullopt after a report.
std::optional<step_params> read_params(table_reader& table) {
  std::vector<step_params::entry> entries;
  bool ok = true;
  for (const auto& key : table.keys()) {
    if (key == "op") {
      continue;
    }
    const auto* node = table.find(key);
    auto value = param_value(*node);
    if (!value) {
      table.fail(*node, key,
                 "a step's parameter is a boolean, number, string, or an array of numbers or of "
                 "strings (got " +
                     std::string(type_name(*node)) + ")");
      ok = false;
      continue;
    }
    entries.push_back({key, std::move(*value), table.errors().where(&node->source())});
  }
  if (!ok) {
    return std::nullopt;
  }
  const auto* op = table.find("op");
  return step_params(table.path(), table.errors().where(op ? &op->source() : nullptr),
                     std::move(entries));
}

}  // namespace

std::optional<user_step_spec> read_user_step(table_reader& table, const std::string& name,
                                             const step_factory& factory) {
  auto params = read_params(table);
  if (!params) {
    return std::nullopt;
  }
  user_step_spec spec{name, nullptr};
  try {
    spec.made = factory(*params);
  } catch (const step_error& e) {
    const auto* at = e.key().empty() ? nullptr : table.find(e.key());
    if (at != nullptr) {
      table.fail(*at, e.key(), e.reason());
    } else {
      table.fail_here("step '" + name + "': " + e.what());
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    table.fail_here("step '" + name + "': its factory threw: " + e.what());
    return std::nullopt;
  }
  if (!spec.made) {
    table.fail_here("step '" + name + "': its factory made no step");
    return std::nullopt;
  }
  for (const auto& key : params->unasked_keys()) {
    table.fail(*table.find(key), key, "unknown key for step '" + name + "'");
  }
  if (!params->unasked_keys().empty()) {
    return std::nullopt;
  }
  return spec;
}

std::string registered_steps_hint() {
  auto names = registered_step_names();
  if (names.empty()) {
    return "; no user steps are registered (conveyor::register_step, or a plugin in "
           "[plugins] libraries)";
  }
  std::string out = "; registered steps: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : ", ") + names[i];
  }
  return out;
}

}  // namespace conveyor::config_detail

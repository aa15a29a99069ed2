#include "config/plugins_reader.hpp"

#include "core/transforms/plugin_loader.hpp"

namespace conveyor::config_detail {

plugins_config read_plugins(table_reader& section) {
  constexpr std::string_view key = "libraries";
  constexpr std::size_t most = 64;
  plugins_config out;
  const auto* value = section.find(key);
  const auto* array = value != nullptr ? value->as_array() : nullptr;
  if (array != nullptr && array->empty()) {
    return out;  // the default: none
  }
  out.libraries = section.strings(key, {}, most);
  if (array == nullptr || array->size() != out.libraries.size()) {
    return out;  // absent, or reported by strings()
  }
  for (std::size_t i = 0; i < out.libraries.size(); ++i) {
    if (auto loaded = load_step_plugin(out.libraries[i]); !loaded) {
      section.errors().fail(&(*array)[i].source(),
                            section.path_of(key) + "[" + std::to_string(i) + "]",
                            loaded.error().message());
    }
  }
  return out;
}

}  // namespace conveyor::config_detail

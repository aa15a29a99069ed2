#include "core/transforms/plugin_loader.hpp"

#include <dlfcn.h>

#include <exception>
#include <mutex>
#include <set>

#include "conveyor/step.hpp"

namespace conveyor {
namespace {

/// The registrar a plugin's entry point adds its steps to: the process's registry.
class registry_registrar final : public step_registrar {
 public:
  void add(std::string name, step_factory factory) override {
    register_step(std::move(name), std::move(factory));
  }
};

std::string dl_failure() {
  const char* what = dlerror();
  return what != nullptr ? what : "unknown dlopen error";
}

error missing_symbol(const std::string& path, const char* symbol) {
  return error(errc::not_found,
               "plugin '" + path + "' has no symbol '" + symbol +
                   "' (define it with CONVEYOR_PLUGIN, conveyor/step.hpp): " + dl_failure());
}

expected<void> load_once(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return error(errc::not_found, "cannot load plugin '" + path + "': " + dl_failure());
  }
  const auto* version = static_cast<const int*>(dlsym(library, "conveyor_step_api_version"));
  if (version == nullptr) {
    return missing_symbol(path, "conveyor_step_api_version");
  }
  if (*version != step_api_version) {
    return error(errc::invalid_config,
                 "plugin '" + path + "' was built against step API version " +
                     std::to_string(*version) + "; this node has step API version " +
                     std::to_string(step_api_version) + ": rebuild the plugin against it");
  }
  using entry_point = void (*)(step_registrar*);
  auto* entry = reinterpret_cast<entry_point>(dlsym(library, "conveyor_register_steps"));
  if (entry == nullptr) {
    return missing_symbol(path, "conveyor_register_steps");
  }
  registry_registrar registrar;
  try {
    entry(&registrar);
  } catch (const std::exception& e) {
    return error(errc::invalid_config,
                 "plugin '" + path + "' failed to register its steps: " + e.what());
  }
  return {};
}

}  // namespace

expected<void> load_step_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard lock(mutex);
  if (loaded.count(path) != 0) {
    return {};
  }
  auto ok = load_once(path);
  if (ok) {
    loaded.insert(path);
  }
  return ok;
}

}  // namespace conveyor

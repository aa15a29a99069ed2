#include "core/transforms/plugin_loader.hpp"

#include <dlfcn.h>

#include <exception>
#include <mutex>
#include <set>

#include "conveyor/step.hpp"
#include "core/storage/byte_source.hpp"
#include "core/transforms/elf_symbol.hpp"

namespace conveyor {
namespace {

constexpr const char* version_symbol = "conveyor_step_api_version";
constexpr const char* entry_symbol = "conveyor_register_steps";

/// A plugin's conveyor_register_steps.
struct entry_point {
  void (*call)(step_registrar*);
};

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

error cannot_load(const std::string& path, const std::string& why) {
  return error(errc::not_found, "cannot load plugin '" + path + "': " + why);
}

error missing_symbol(const std::string& path, const char* symbol, const std::string& why) {
  return error(errc::not_found,
               "plugin '" + path + "' has no symbol '" + symbol +
                   "' (define it with CONVEYOR_PLUGIN, conveyor/step.hpp): " + why);
}

expected<void> check_version(const std::string& path, int version) {
  if (version == step_api_version) {
    return {};
  }
  return error(errc::invalid_config,
               "plugin '" + path + "' was built against step API version " +
                   std::to_string(version) + "; this node has step API version " +
                   std::to_string(step_api_version) + ": rebuild the plugin against it");
}

/// The step API version in the file at `path`, read from its bytes: nothing in it runs.
expected<int> version_in_file(const std::string& path) {
  auto file = open_file_source(path);
  if (!file) {
    return cannot_load(path, file.error().message());
  }
  auto version = read_exported_int(**file, version_symbol);
  if (!version) {
    return cannot_load(path, version.error().message());
  }
  if (!*version) {
    return missing_symbol(path, version_symbol, "its dynamic symbol table has none");
  }
  return **version;
}

/// The entry point of `library`, loaded from `path`, once its version symbol says again what
/// its file said (the file may have been replaced since it was read).
expected<entry_point> checked_entry(const std::string& path, void* library) {
  const auto* version = static_cast<const int*>(dlsym(library, version_symbol));
  if (version == nullptr) {
    return missing_symbol(path, version_symbol, dl_failure());
  }
  if (auto ok = check_version(path, *version); !ok) {
    return std::move(ok).error();
  }
  auto* entry = reinterpret_cast<void (*)(step_registrar*)>(dlsym(library, entry_symbol));
  if (entry == nullptr) {
    return missing_symbol(path, entry_symbol, dl_failure());
  }
  return entry_point{entry};
}

/// Calls the plugin's entry point. The library stays loaded whatever it does: the steps it
/// registered (some, when it throws) run its code.
expected<void> register_steps(const std::string& path, entry_point entry) {
  registry_registrar registrar;
  try {
    entry.call(&registrar);
  } catch (const std::exception& e) {
    return error(errc::invalid_config,
                 "plugin '" + path + "' failed to register its steps: " + e.what());
  }
  return {};
}

expected<void> load_once(const std::string& path) {
  auto version = version_in_file(path);
  if (!version) {
    return std::move(version).error();
  }
  if (auto ok = check_version(path, *version); !ok) {
    return ok;
  }
  // A name without '/' would make dlopen search the library path: load the file just read.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return cannot_load(path, dl_failure());
  }
  auto entry = checked_entry(path, library);
  if (!entry) {
    dlclose(library);  // refused before anything of it was called: nothing points into it
    return std::move(entry).error();
  }
  return register_steps(path, *entry);
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

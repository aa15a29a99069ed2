#pragma once
/// The supervised roles of the pipeline: the actors that hold samples while they work on them.

#include <cstdint>
#include <string>
#include <string_view>

namespace conveyor {

enum class worker_role : std::int32_t { reader = 0, preprocessor = 1, straggler = 2 };

inline constexpr int worker_role_count = 3;

constexpr std::string_view to_string(worker_role r) noexcept {
  switch (r) {
    case worker_role::reader:
      return "reader";
    case worker_role::preprocessor:
      return "preprocessor";
    case worker_role::straggler:
      return "straggler";
  }
  return "?";
}

/// "preprocessor-3": how logs and errors name one worker.
inline std::string worker_name(worker_role r, int index) {
  return std::string(to_string(r)) + "-" + std::to_string(index);
}

}  // namespace conveyor

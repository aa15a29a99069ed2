#include "core/base/deliberate_leak.hpp"

// g++ says __SANITIZE_ADDRESS__; clang says __has_feature (which g++ 12 lacks, hence nested).
#if defined(__SANITIZE_ADDRESS__)
#define CONVEYOR_LEAK_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define CONVEYOR_LEAK_SANITIZER 1
#endif
#endif

#ifdef CONVEYOR_LEAK_SANITIZER
#include <sanitizer/lsan_interface.h>
#endif

namespace conveyor {

void register_deliberate_leak(const void* object) noexcept {
#ifdef CONVEYOR_LEAK_SANITIZER
  __lsan_ignore_object(object);
#else
  static_cast<void>(object);
#endif
}

}  // namespace conveyor

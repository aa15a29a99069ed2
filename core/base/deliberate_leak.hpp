#pragma once
/// Memory kept for ever on purpose (work that may still use it could not be waited for), and
/// said so to LeakSanitizer, so that the sanitizer suite reports only real leaks.

#include <utility>

namespace conveyor {

/// Registers the heap object at `object` as deliberately leaked: under LeakSanitizer
/// (__lsan_ignore_object) it is not reported, nor is what it points to; elsewhere it does
/// nothing. `object` must be the start of a block from `new`. Thread-safe.
void register_deliberate_leak(const void* object) noexcept;

/// Moves `value` into a heap object that is never freed (so neither is what it owns), and
/// registers it as deliberately leaked. Thread-safe.
template <class T>
void leak_for_ever(T value) {
  register_deliberate_leak(new T(std::move(value)));  // NOLINT: deliberately never freed
}

}  // namespace conveyor

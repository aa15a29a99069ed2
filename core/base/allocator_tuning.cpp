#include "core/base/allocator_tuning.hpp"

#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace conveyor {

void keep_freed_memory_for_reuse() noexcept {
#if defined(__GLIBC__)
  constexpr int mib = 1024 * 1024;
  mallopt(M_TRIM_THRESHOLD, 256 * mib);
  mallopt(M_MMAP_THRESHOLD, 32 * mib);
#endif
}

}  // namespace conveyor

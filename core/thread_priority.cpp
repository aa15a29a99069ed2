#include "core/thread_priority.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace conveyor {

bool lower_thread_priority(int nice) noexcept {
  // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
  auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  int current = getpriority(PRIO_PROCESS, tid);
  if (current == -1 && errno != 0) {
    return false;
  }
  return setpriority(PRIO_PROCESS, tid, current + nice) == 0;
}

}  // namespace conveyor

#pragma once
/// Scheduling priority of the calling thread.

namespace conveyor {

/// Lowers the calling thread's priority by `nice` steps (Linux: per-thread nice). Straggler
/// actors run this way: they use the CPU the preprocessors leave idle, and yield it to them
/// when both have work, so slow samples never slow the fast path down. Returns false (and
/// changes nothing) when the system refuses.
bool lower_thread_priority(int nice) noexcept;

}  // namespace conveyor

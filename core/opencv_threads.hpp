#pragma once
/// OpenCV's own thread pool would run resize and colour conversions on extra threads beside
/// Conveyor's one-preprocessor-per-core pool and oversubscribe the cores. The pipeline turns
/// it off once at start. Process-wide; thread-safe.

namespace conveyor {

/// Makes OpenCV run every call on the calling thread.
void disable_opencv_threads() noexcept;

}  // namespace conveyor

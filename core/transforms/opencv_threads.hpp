#pragma once
/// OpenCV's own thread pool would run resize and colour conversions on extra threads beside
/// Conveyor's one-preprocessor-per-core pool and oversubscribe the cores, so a pipeline turns
/// it off while it runs. The setting is process-wide (cv::setNumThreads): the trainer's own
/// value is restored when the last pipeline goes.

#include <mutex>

namespace conveyor {

/// While at least one exists, OpenCV runs every call on the calling thread; when the last one
/// is destroyed, the thread count the process had before the first is restored. Thread-safe.
class opencv_threads_off {
 public:
  opencv_threads_off();
  ~opencv_threads_off();
  opencv_threads_off(const opencv_threads_off&) = delete;
  opencv_threads_off& operator=(const opencv_threads_off&) = delete;

 private:
  static std::mutex mutex_;
  static int holders_;        ///< guarded by mutex_
  static int saved_threads_;  ///< the trainer's setting while holders_ > 0
};

}  // namespace conveyor

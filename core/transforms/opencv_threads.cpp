#include "core/transforms/opencv_threads.hpp"

#include <opencv2/core/utility.hpp>

namespace conveyor {

std::mutex opencv_threads_off::mutex_;
int opencv_threads_off::holders_ = 0;
int opencv_threads_off::saved_threads_ = 0;

opencv_threads_off::opencv_threads_off() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (holders_++ == 0) {
    saved_threads_ = cv::getNumThreads();
    cv::setNumThreads(0);
  }
}

opencv_threads_off::~opencv_threads_off() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--holders_ == 0) {
    cv::setNumThreads(saved_threads_);
  }
}

}  // namespace conveyor

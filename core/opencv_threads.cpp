#include "core/opencv_threads.hpp"

#include <opencv2/core/utility.hpp>

namespace conveyor {

void disable_opencv_threads() noexcept {
  cv::setNumThreads(0);
}

}  // namespace conveyor

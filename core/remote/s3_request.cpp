#include "core/remote/s3_request.hpp"

namespace conveyor {

bool retryable(s3_failure f) noexcept {
  switch (f) {
    case s3_failure::throttled:
    case s3_failure::server_error:
    case s3_failure::reset:
    case s3_failure::timeout:
    case s3_failure::refused:
      return true;
    default:
      return false;
  }
}

const char* to_string(s3_failure f) noexcept {
  switch (f) {
    case s3_failure::none:
      return "none";
    case s3_failure::throttled:
      return "throttled";
    case s3_failure::server_error:
      return "server_error";
    case s3_failure::reset:
      return "reset";
    case s3_failure::timeout:
      return "timeout";
    case s3_failure::refused:
      return "refused";
    case s3_failure::client_error:
      return "client_error";
    case s3_failure::garbage:
      return "garbage";
    case s3_failure::fatal:
      return "fatal";
  }
  return "unknown";
}

}  // namespace conveyor

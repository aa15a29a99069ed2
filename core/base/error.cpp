#include "conveyor/error.hpp"

namespace conveyor {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::io_error:
      return "io_error";
    case errc::not_found:
      return "not_found";
    case errc::corrupt_shard:
      return "corrupt_shard";
    case errc::checksum_mismatch:
      return "checksum_mismatch";
    case errc::decode_error:
      return "decode_error";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::invalid_config:
      return "invalid_config";
    case errc::empty_dataset:
      return "empty_dataset";
    case errc::transform_error:
      return "transform_error";
    case errc::worker_failed:
      return "worker_failed";
    case errc::resource_exhausted:
      return "resource_exhausted";
    case errc::timed_out:
      return "timed_out";
    case errc::permission_denied:
      return "permission_denied";
    case errc::disconnected:
      return "disconnected";
    case errc::device_error:
      return "device_error";
    case errc::filtered:
      return "filtered";
  }
  return "unknown_error";
}

std::string error::what() const {
  std::string out(to_string(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace conveyor

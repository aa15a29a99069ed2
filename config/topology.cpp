#include "config/topology.hpp"

namespace conveyor {

bool fault_config::enabled() const noexcept {
  return crash_preprocessor > 0.0 || crash_reader > 0.0 || crash_straggler > 0.0 ||
         (delay_probability > 0.0 && delay_ms > 0.0) || read_error > 0.0 || copy_faults();
}

bool fault_config::copy_faults() const noexcept {
  return copy_fault > 0 || copy_stall > 0 || copy_delay_ms > 0.0;
}

std::string_view to_string(shard_by split) noexcept {
  return split == shard_by::shard ? "shard" : "sample";
}

std::string_view to_string(s3_addressing addressing) noexcept {
  switch (addressing) {
    case s3_addressing::automatic:
      return "auto";
    case s3_addressing::path:
      return "path";
    case s3_addressing::virtual_host:
      return "virtual";
  }
  return "?";
}

std::string_view to_string(dataset_format format) noexcept {
  switch (format) {
    case dataset_format::shards:
      return "shards";
    case dataset_format::folder:
      return "folder";
    case dataset_format::webdataset:
      return "webdataset";
    case dataset_format::npy_pairs:
      return "npy_pairs";
    case dataset_format::librispeech:
      return "librispeech";
    case dataset_format::python:
      return "python";
  }
  return "?";
}

std::string_view to_string(output_dtype type) noexcept {
  switch (type) {
    case output_dtype::float32:
      return "float32";
    case output_dtype::bfloat16:
      return "bfloat16";
  }
  return "?";
}

std::string_view to_string(interpolation interp) noexcept {
  switch (interp) {
    case interpolation::nearest:
      return "nearest";
    case interpolation::bilinear:
      return "bilinear";
    case interpolation::bicubic:
      return "bicubic";
    case interpolation::area:
      return "area";
    case interpolation::opencv_bilinear:
      return "opencv_bilinear";
  }
  return "?";
}

std::string_view to_string(resample_method method) noexcept {
  switch (method) {
    case resample_method::sinc:
      return "sinc";
    case resample_method::soxr:
      return "soxr";
  }
  return "?";
}

}  // namespace conveyor

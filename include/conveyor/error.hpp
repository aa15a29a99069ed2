#pragma once
/// Errors are values in Conveyor: every fallible call returns `expected<T>`, whose error names
/// what went wrong and where (file, shard, record, sample, key). Nothing here throws.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace conveyor {

/// The documented error codes. Values are stable: they may travel as integers.
enum class errc : std::uint8_t {
  io_error = 1,             ///< a file could not be opened, read or written
  not_found = 2,            ///< a path, class, key or record does not exist
  corrupt_shard = 3,        ///< bad magic or version, truncated or torn shard, bad index
  checksum_mismatch = 4,    ///< a record's bytes differ from its stored checksum
  decode_error = 5,         ///< bytes that are not a decodable image
  invalid_argument = 6,     ///< a parameter out of its documented range
  invalid_config = 7,       ///< a topology or manifest that does not validate
  empty_dataset = 8,        ///< a dataset or directory without samples
  transform_error = 9,      ///< a transform step failed on a sample (e.g. an OpenCV exception)
  worker_failed = 10,       ///< pipeline actors kept failing: a restart budget is spent
  resource_exhausted = 11,  ///< every buffer is held by the caller: nothing can arrive
  timed_out = 12,           ///< nothing came within the configured time
  permission_denied = 13,   ///< the operating system refused access (a node's socket)
  disconnected = 14,        ///< the other side of a connection has gone (a node or a client)
  device_error = 15,        ///< a device's asynchronous work failed (a CUDA fault) or stalled
  /// A recipe's filter left the sample out (an utterance over max_duration): not a fault;
  /// the sample is counted as filtered, neither delivered nor quarantined.
  filtered = 16,
};

/// Short stable name of an error code, e.g. "checksum_mismatch".
std::string_view to_string(errc code) noexcept;

/// An error code plus a message that names the file, record, sample or key concerned.
class error {
 public:
  error(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  /// "<code>: <message>", for logs and command lines.
  std::string what() const;

 private:
  errc code_;
  std::string message_;
};

/// Either a T or an error. A minimal C++17 stand-in for std::expected.
template <class T>
class expected {
 public:
  expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  expected(conveyor::error err)
      : state_(std::in_place_index<1>, std::move(err)) {}  // NOLINT: implicit

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// Precondition: has_value().
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// Precondition: !has_value().
  const conveyor::error& error() const& { return std::get<1>(state_); }
  conveyor::error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, conveyor::error> state_;
};

/// Success, or an error.
template <>
class expected<void> {
 public:
  expected() = default;
  expected(conveyor::error err) : error_(std::move(err)) {}  // NOLINT: implicit

  bool has_value() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }

  /// Precondition: !has_value().
  const conveyor::error& error() const& { return *error_; }
  conveyor::error&& error() && { return std::move(*error_); }

 private:
  std::optional<conveyor::error> error_;
};

}  // namespace conveyor

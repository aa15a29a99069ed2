#pragma once
/// One S3 request and its answer, as the connection (s3_connection.hpp) performs them: what to
/// ask, where the answer's body goes, and what came back, classified for the retry policy.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

struct s3_request {
  std::string method = "GET";  ///< GET, HEAD, PUT, POST, DELETE
  std::string bucket;
  std::string key;  ///< "" for a request on the bucket (a listing)
  std::vector<std::pair<std::string, std::string>> query;  ///< names and values, not encoded
  /// A range GET of [first, first + size): the body goes straight into `into`, which holds
  /// exactly `size` bytes; a server answering more or fewer is an error.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
  std::uint8_t* into = nullptr;
  /// A range GET into `into`: called on the connection's thread as the body arrives, with how
  /// many bytes of the range are in `into` so far (counted from the range's first byte,
  /// `received` included). Optional.
  std::function<void(std::uint64_t)> progress;
  /// Bytes of the range a former attempt received (s3_client resumes a range after them): the
  /// offset `progress` counts from.
  std::uint64_t received = 0;
  /// The payload of a PUT or POST (not copied: kept alive by the caller).
  const std::uint8_t* payload = nullptr;
  std::size_t payload_size = 0;
  std::vector<std::pair<std::string, std::string>> headers;  ///< e.g. Content-Type
};

/// Why an attempt failed, for the retry policy and the counters.
enum class s3_failure : std::uint8_t {
  none,
  throttled,     ///< 503 SlowDown, 429: retried after a backoff
  server_error,  ///< another 5xx, 408: retried
  reset,         ///< the connection broke, or closed with nothing or part of an answer: retried
  timeout,       ///< the request's deadline passed: retried
  refused,       ///< the endpoint refused to connect: retried (a store restarting)
  client_error,  ///< a 4xx (no such bucket or key, access denied): final
  garbage,       ///< an answer that is not HTTP, or a body of the wrong size: final
  fatal,         ///< a name that does not resolve, a TLS failure: final
};

/// True for the failures worth another attempt.
bool retryable(s3_failure f) noexcept;
/// "throttled", "server_error", ...: names in counters and messages.
const char* to_string(s3_failure f) noexcept;

/// One attempt's outcome.
struct s3_response {
  long status = 0;  ///< HTTP status; 0 when no answer came
  s3_failure failure = s3_failure::none;
  std::string detail;              ///< what went wrong, for the message (never credentials)
  std::vector<std::uint8_t> body;  ///< the body, unless it went into the request's `into`
  std::string etag;                ///< the ETag header (an uploaded part's)
  std::uint64_t body_bytes = 0;    ///< bytes of body received
  std::uint64_t range_bytes = 0;   ///< of them, bytes of the range written into `into`
};

}  // namespace conveyor

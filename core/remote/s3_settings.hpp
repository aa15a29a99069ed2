#pragma once
/// How a node reaches an object store: the [s3] settings as configured, and what they resolve to
/// at start (endpoint, region, addressing, credentials), from the settings first, then the
/// standard environment variables and the AWS shared files, in the order the AWS CLI and SDKs
/// use. Credentials never appear in a message or log: only where they came from.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "conveyor/error.hpp"
#include "core/remote/s3_location.hpp"

namespace conveyor {

/// Where the bucket goes in a request: its path ("endpoint/bucket/key") or its host name
/// ("bucket.endpoint/key"). automatic: virtual-host on AWS's own endpoints for a bucket name
/// without dots, path-style on any other endpoint (MinIO, Ceph, a loopback server).
enum class s3_addressing : std::uint8_t { automatic, path, virtual_host };

/// [s3], as configured ("" and 0: not set).
struct s3_settings {
  std::string endpoint_url;  ///< "http[s]://host[:port]"; "": AWS_ENDPOINT_URL_S3,
                             ///< AWS_ENDPOINT_URL, the profile's endpoint_url, or AWS's own
  std::string region;        ///< "": AWS_REGION, AWS_DEFAULT_REGION, the profile's, us-east-1
  std::string profile;       ///< "": AWS_PROFILE, or "default"
  s3_addressing addressing = s3_addressing::automatic;
  std::uint64_t read_size = 8u << 20;  ///< bytes per range GET at most (coalesced reads)
  int connections = 16;                ///< range GETs in flight at once
  int request_timeout_ms = 30000;      ///< one request's deadline, connecting included
  int retries = 6;                     ///< attempts after the first (5xx, SlowDown, resets)
  int backoff_ms = 100;                ///< the first retry's backoff; doubling, with jitter
  /// Bytes fetched ahead of the readers and not read yet, at most; 0: the cache's memory plus
  /// 2 x connections x read_size.
  std::uint64_t prefetch_bytes = 0;
};

/// AWS credentials; `origin` says where they came from ("environment", "profile p of
/// ~/.aws/credentials") and is what logs show, never the keys.
struct aws_credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  ///< "" unless temporary credentials
  std::string origin;
};

/// The settings resolved: what every request uses.
struct s3_access {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< "s3.us-east-1.amazonaws.com", "127.0.0.1:9000" (port kept)
  std::string region;
  bool virtual_host = false;
  aws_credentials credentials;
  /// "endpoint http://127.0.0.1:9000 (s3.endpoint_url), region us-east-1, path-style,
  /// credentials from the environment": for the log.
  std::string describe() const;
};

/// Reads an environment variable: nullptr when unset (std::getenv, or a test's).
using environment = std::function<const char*(const char*)>;
environment process_environment();

/// Resolves `settings` against `env` and the AWS shared files (AWS_SHARED_CREDENTIALS_FILE,
/// AWS_CONFIG_FILE, or those under $HOME/.aws). Credentials: AWS_ACCESS_KEY_ID and
/// AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) unless s3.profile names a profile, then the
/// profile in the credentials file, then in the config file. Errors (invalid_config): an
/// endpoint that is not http(s)://host[:port], a profile that exists in neither file when one
/// was named, no credentials anywhere (naming where it looked), a shared file that does not
/// parse (naming its line).
expected<s3_access> resolve_s3_access(const s3_settings& settings, const environment& env);

/// An s3:// address and how to reach it.
struct s3_target {
  s3_location at;
  std::shared_ptr<const s3_access> access;
};
/// `url` parsed (parse_s3_url) and `settings` resolved (resolve_s3_access); errors are
/// invalid_config and name the URL.
expected<s3_target> resolve_s3_target(const std::string& url, const s3_settings& settings,
                                      const environment& env);

}  // namespace conveyor

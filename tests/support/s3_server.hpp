#pragma once
/// A real S3-compatible server on a loopback port for one test: moto_server (moto 5, which
/// this machine image ships), or, where it is missing, s3rver from the npm registry
/// (scripts/install-deps installs it: scripts/ensure-s3rver). Started by the constructor, which
/// waits (bounded) for it to say it listens; killed by the destructor. Its credentials are
/// S3RVER/S3RVER (s3rver checks signatures with them; moto takes any unless told to check).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/remote/s3_settings.hpp"
#include "support/app_process.hpp"

namespace conveyor::testing {

inline constexpr const char* s3_test_key = "S3RVER";
inline constexpr const char* s3_test_secret = "S3RVER";

class s3_server {
 public:
  /// `check_credentials`: moto refuses every key (INITIAL_NO_AUTH_ACTION_COUNT=0), for the
  /// wrong-credentials tests.
  explicit s3_server(bool check_credentials = false);
  ~s3_server();

  std::uint16_t port() const noexcept { return port_; }
  /// "http://127.0.0.1:<port>".
  std::string endpoint() const;
  /// [s3] settings for this server (endpoint, path-style, short deadlines and backoffs).
  s3_settings settings() const;
  /// The environment a client of this server resolves its credentials from.
  environment credentials() const;
  /// "env AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... HOME=<dir>": a command line's prefix
  /// that runs an app with this server's credentials and no shared files.
  std::string app_env(const std::string& home) const;
  /// Makes bucket `name` (a failed expectation when it cannot).
  void make_bucket(const std::string& name) const;
  /// Puts `bytes` at s3://bucket/key.
  void put(const std::string& bucket, const std::string& key,
           const std::vector<std::uint8_t>& bytes) const;
  /// The object at s3://bucket/key.
  std::vector<std::uint8_t> get(const std::string& bucket, const std::string& key) const;
  /// "moto" or "s3rver".
  const std::string& kind() const noexcept { return kind_; }

 private:
  std::string kind_;
  std::uint16_t port_ = 0;
  std::unique_ptr<temp_dir> data_;
  std::unique_ptr<app_process> process_;
};

}  // namespace conveyor::testing

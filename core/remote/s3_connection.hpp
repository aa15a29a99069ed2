#pragma once
/// One connection to an object store: a libcurl easy handle (kept alive between requests, HTTPS
/// with the system's CA store) that performs one signed request at a time (SigV4 by
/// aws_sigv4.hpp: the signing is ours, held against AWS's test vectors, so that a listing's
/// query is canonicalized as AWS does, which libcurl 7.88's CURLOPT_AWS_SIGV4 does not). One
/// attempt per call: retries are the client's (s3_client.hpp). Not thread-safe: one per thread.

#include <memory>

#include "core/remote/s3_request.hpp"
#include "core/remote/s3_settings.hpp"

namespace conveyor {

class s3_connection {
 public:
  /// Requests to `access`, each within `timeout_ms` (connecting included).
  s3_connection(std::shared_ptr<const s3_access> access, int timeout_ms);
  ~s3_connection();
  s3_connection(const s3_connection&) = delete;
  s3_connection& operator=(const s3_connection&) = delete;

  /// Performs `r` once. Bodies of answers other than a range's data are kept up to 64 MiB
  /// (more is `garbage`); a range's data goes into r.into, exactly r.range->second bytes, from a
  /// 206 whose Content-Range is the range asked (content_range.hpp: one without it, or for
  /// another range, is `garbage` naming both, and not a byte of it reaches r.into), or from a
  /// 200 for a range from the object's first byte.
  s3_response perform(const s3_request& r);

  const s3_access& access() const noexcept { return *access_; }

 private:
  struct impl;
  std::shared_ptr<const s3_access> access_;
  int timeout_ms_;
  std::unique_ptr<impl> impl_;
};

/// "s3://bucket/key" (or "s3://bucket" for a request on the bucket): how messages name it.
std::string url_of(const s3_request& r);

}  // namespace conveyor

#pragma once
/// AWS Signature Version 4 (the request signing of S3 and every S3-compatible store), as AWS
/// specifies it, step by step so that each step can be held against AWS's published test
/// vectors (tests/test_aws_sigv4.cpp): the canonical request, the string to sign and its
/// credential scope, the signature, the Authorization header.
///
/// S3's flavour: the path is URI-encoded once (never normalized, '/' kept), query names and
/// values are encoded and sorted, header names are lowercased and sorted, values trimmed with
/// inner runs of spaces folded to one. Pure functions: thread-safe.

#include <string>
#include <utility>
#include <vector>

namespace conveyor::aws {

/// The SHA-256 of an empty payload, as hex (the payload hash of every GET).
inline constexpr const char* empty_payload_sha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The payload hash that leaves a payload out of the signature (HTTPS, or a large upload).
inline constexpr const char* unsigned_payload = "UNSIGNED-PAYLOAD";

/// A request as signed: the path and the query's names and values as they are (not encoded:
/// the signer encodes them), the headers to sign (the Host header among them), and the hex
/// SHA-256 of the payload (or unsigned_payload).
struct signable_request {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash = empty_payload_sha256;
};

/// Whose request, where: the date ("20150830"), the timestamp ("20150830T123600Z"), region
/// ("us-east-1") and service ("s3").
struct signing_scope {
  std::string timestamp;
  std::string region;
  std::string service;
  std::string date() const { return timestamp.substr(0, 8); }
  /// "<date>/<region>/<service>/aws4_request".
  std::string credential_scope() const;
};

/// RFC 3986 encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~) kept, every
/// other byte as %XY (upper-case hex); '/' kept when `keep_slash`.
std::string uri_encode(const std::string& text, bool keep_slash);

/// Header names lowercased, sorted and joined with ';' ("host;x-amz-date").
std::string signed_headers(const signable_request& r);
/// The canonical request: method, encoded path, canonical query, canonical headers, signed
/// headers and payload hash, one per line. Headers named twice are joined with ','.
std::string canonical_request(const signable_request& r);
/// "AWS4-HMAC-SHA256", the timestamp, the credential scope and the hex SHA-256 of the
/// canonical request, one per line.
std::string string_to_sign(const signing_scope& scope, const std::string& canonical);
/// The hex HMAC-SHA256 of `to_sign` under the key derived from `secret_key` and the scope.
std::string signature(const std::string& secret_key, const signing_scope& scope,
                      const std::string& to_sign);
/// The Authorization header's value ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
/// Signature=..."): all of the above for `r`.
std::string authorization(const std::string& access_key, const std::string& secret_key,
                          const signing_scope& scope, const signable_request& r);

/// The hex SHA-256 of `size` bytes at `data` (a payload's hash).
std::string sha256_hex(const void* data, std::size_t size);
/// The UTC time `seconds` since the epoch as a SigV4 timestamp ("20150830T123600Z").
std::string amz_timestamp(long long seconds);

}  // namespace conveyor::aws

#pragma once
/// An object store's address: "s3://bucket/prefix" split into its bucket and key prefix, and the
/// keys below it. Pure: thread-safe.

#include <string>

#include "conveyor/error.hpp"

namespace conveyor {

struct s3_location {
  std::string bucket;
  std::string prefix;  ///< "" (the bucket's root) or a key prefix without a trailing '/'

  /// The key of `name` under the prefix ("prefix/name", or "name" at the root).
  std::string key(const std::string& name) const;
  /// "s3://bucket/key", the form every message names an object by.
  std::string url(const std::string& key) const;
  /// "s3://bucket/prefix" (or "s3://bucket").
  std::string url() const;
};

/// Whether `path` names an object store ("s3://..."), not a local path.
bool is_s3_url(const std::string& path) noexcept;

/// Splits "s3://bucket[/prefix[/]]". invalid_argument, naming `url`, when it is not of that
/// form: no bucket, a bucket name S3 refuses (3 to 63 of a-z 0-9 . -, starting and ending with a
/// letter or digit), or an empty segment in the prefix ("a//b").
expected<s3_location> parse_s3_url(const std::string& url);

}  // namespace conveyor

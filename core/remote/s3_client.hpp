#pragma once
/// The S3 operations Conveyor uses, each retried as the AWS SDKs do: on throttling (503
/// SlowDown, 429), other 5xx, a reset or refused connection and a passed deadline, up to
/// s3.retries more attempts, after exponential backoff with full jitter (a random wait up to
/// s3.backoff_ms x 2^attempt, at most 20 s). Final failures are errors that name the object's
/// URL, the HTTP status and the server's error code and message (never credentials): not_found
/// (404), permission_denied (403), timed_out (deadline), io_error (the rest). Not thread-safe:
/// one client per thread (each holds one connection).

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/remote/object_listing.hpp"
#include "core/remote/s3_connection.hpp"
#include "core/remote/transfer_counters.hpp"

namespace conveyor {

class s3_client {
 public:
  s3_client(std::shared_ptr<const s3_access> access, const s3_settings& settings,
            std::shared_ptr<transfer_counters> counters);

  /// `r`, attempted until it succeeds, fails for good, or the retries are spent. A range GET
  /// into memory that broke off is resumed: the next attempt asks only for the bytes not
  /// received yet (those received are not written again); one that broke off after the
  /// range's every byte had arrived is complete (its response then says no failure).
  expected<s3_response> call(s3_request r);

  /// A whole object (a manifest): at most `limit` bytes, else invalid_argument.
  expected<std::vector<std::uint8_t>> get_object(const std::string& bucket, const std::string& key,
                                                 std::uint64_t limit);
  /// Exactly `size` bytes of an object from `offset`, into `into`; `progress` (optional) is
  /// told how many have arrived, in order, as they do (s3_request::progress).
  expected<void> get_range(const std::string& bucket, const std::string& key, std::uint64_t offset,
                           std::uint64_t size, std::uint8_t* into,
                           std::function<void(std::uint64_t)> progress = {});
  /// Every object whose key starts with `prefix` (ListObjectsV2, page after page), in the
  /// store's order (S3's: by key), within `bounds`; errors name "s3://bucket/prefix" and, for a
  /// page that cannot be believed, its number (object_listing.hpp).
  expected<std::vector<listed_object>> list(const std::string& bucket, const std::string& prefix,
                                            listing_bounds bounds = {});
  expected<void> put_object(const std::string& bucket, const std::string& key,
                            const std::uint8_t* data, std::size_t size);
  /// Deletes an object; one that does not exist is no error (S3 answers 204 either way).
  expected<void> delete_object(const std::string& bucket, const std::string& key);

  /// Multipart uploads (objects past one PUT's practical size): begin, parts (1-based, every
  /// part but the last at least 5 MiB), complete with every part's ETag; abort drops the parts.
  expected<std::string> begin_upload(const std::string& bucket, const std::string& key);
  expected<std::string> upload_part(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id, int part,
                                    const std::uint8_t* data, std::size_t size);
  expected<void> complete_upload(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id,
                                 const std::vector<std::string>& etags);
  void abort_upload(const std::string& bucket, const std::string& key,
                    const std::string& upload_id);

  const std::shared_ptr<transfer_counters>& counters() const noexcept { return counters_; }

 private:
  std::chrono::milliseconds backoff(int attempt);

  s3_connection connection_;
  s3_settings settings_;
  std::shared_ptr<transfer_counters> counters_;
  std::mt19937_64 jitter_;
};

/// The error for a final failed attempt of `r`: its URL, what went wrong, how many attempts.
error s3_error(const s3_request& r, const s3_response& last, int attempts);

}  // namespace conveyor

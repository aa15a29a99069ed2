#pragma once
/// A listing of the objects under a prefix (ListObjectsV2), page after page, that believes no
/// more of what the store says than it must: a page is parsed whole before it counts; a
/// continuation token the listing was given before ends it (a store that would send the client
/// round in a circle); and a listing ends at a bound of pages and of objects, so that a store
/// that keeps answering "truncated" cannot hold a node in start-up for ever, nor fill its memory.
///
/// The bounds are generous: a million objects is a WebDataset of a million tars (at the usual
/// 1 GB a tar, a petabyte); ten thousand pages allow stores that send 100 keys a page rather
/// than S3's 1000. Keys are at most 1024 bytes (S3's own limit), so a listing holds about
/// 1 GiB at most, and makes at most `pages` requests.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/error.hpp"

namespace conveyor {

struct listed_object {
  std::string key;
  std::uint64_t size = 0;
};

/// The most one listing takes in.
struct listing_bounds {
  std::size_t pages = 10000;
  std::size_t objects = 1000000;
};

/// S3's longest key, in bytes: a listed key longer than this is not one.
inline constexpr std::size_t max_key_bytes = 1024;

/// One page of a ListObjectsV2 answer.
struct listing_page {
  std::vector<listed_object> objects;
  std::string next_token;  ///< "" when the page is the last (not truncated)
};

/// `xml` read as one page. Errors (io_error) name `where` (the listing's "s3://bucket/prefix"):
/// not a ListBucketResult document, an object without a Key or a Size, a Size that is not a
/// number, a key longer than max_key_bytes, a truncated page without a continuation token.
/// Pure: thread-safe.
expected<listing_page> parse_listing_page(std::string_view xml, const std::string& where);

/// The pages of one listing, as they come. Not thread-safe: one listing, one thread.
class object_listing {
 public:
  /// `where`: "s3://bucket/prefix", for messages.
  explicit object_listing(std::string where, listing_bounds bounds = {});

  /// Takes the next page: the token to ask for the page after it, or "" when the listing is
  /// whole. Errors (io_error), naming `where` and the page's number (from 1): a continuation
  /// token given before (and the page that gave it first), objects past bounds.objects, a page
  /// still truncated when bounds.pages were taken. After an error the listing is over.
  expected<std::string> add(listing_page page);

  /// The objects listed, in the order listed.
  std::vector<listed_object> take() && { return std::move(objects_); }

 private:
  error refused(const std::string& why) const;

  std::string where_;
  listing_bounds bounds_;
  std::size_t pages_ = 0;
  std::vector<listed_object> objects_;
  /// The tokens given so far, by digest (a token may be long): the page that gave each.
  std::map<std::string, std::size_t> tokens_;
};

}  // namespace conveyor

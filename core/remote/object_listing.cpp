#include "core/remote/object_listing.hpp"

#include <algorithm>
#include <iterator>

#include "core/remote/aws_sigv4.hpp"
#include "core/remote/xml_fields.hpp"

namespace conveyor {
namespace {

expected<std::uint64_t> size_of(const std::string& text, const std::string& where) {
  std::uint64_t value = 0;
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return error{errc::io_error, where + ": a listing with a Size that is not a number"};
  }
  for (char c : text) {
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

// A token as a message shows it: clipped.
std::string shown(const std::string& token) {
  constexpr std::size_t most = 80;
  return "\"" + (token.size() <= most ? token : token.substr(0, most) + "...") + "\"";
}

}  // namespace

expected<listing_page> parse_listing_page(std::string_view xml, const std::string& where) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return error{errc::io_error, where + ": the listing is not a ListBucketResult document"};
  }
  listing_page page;
  for (auto contents : xml_elements(xml, "Contents")) {
    auto key = xml_text(contents, "Key");
    auto size = xml_text(contents, "Size");
    if (!key || !size) {
      return error{errc::io_error, where + ": a listed object without a Key or a Size"};
    }
    if (key->size() > max_key_bytes) {
      return error{errc::io_error, where + ": a listed key of " + std::to_string(key->size()) +
                                       " bytes, longer than S3 allows (" +
                                       std::to_string(max_key_bytes) + ")"};
    }
    auto bytes = size_of(*size, where);
    if (!bytes) {
      return std::move(bytes).error();
    }
    page.objects.push_back({std::move(*key), *bytes});
  }
  if (xml_text(xml, "IsTruncated").value_or("false") != "true") {
    return page;
  }
  auto token = xml_text(xml, "NextContinuationToken");
  if (!token || token->empty()) {
    return error{errc::io_error, where + ": a truncated listing without a continuation token"};
  }
  page.next_token = std::move(*token);
  return page;
}

object_listing::object_listing(std::string where, listing_bounds bounds)
    : where_(std::move(where)), bounds_(bounds) {}

error object_listing::refused(const std::string& why) const {
  return error{errc::io_error,
               where_ + ": page " + std::to_string(pages_) + " of the listing " + why};
}

expected<std::string> object_listing::add(listing_page page) {
  ++pages_;
  if (page.objects.size() > bounds_.objects - std::min(bounds_.objects, objects_.size())) {
    return refused("brings it past " + std::to_string(bounds_.objects) +
                   " objects, the most a listing takes in: the store lists more than a "
                   "dataset holds, or lists without end");
  }
  objects_.insert(objects_.end(), std::make_move_iterator(page.objects.begin()),
                  std::make_move_iterator(page.objects.end()));
  if (page.next_token.empty()) {
    return std::string();
  }
  if (pages_ >= bounds_.pages) {
    return refused("is still truncated after " + std::to_string(bounds_.pages) +
                   " pages, the most a listing takes in: the store lists without end");
  }
  const auto digest = aws::sha256_hex(page.next_token.data(), page.next_token.size());
  const auto [at, fresh] = tokens_.emplace(digest, pages_);
  if (!fresh) {
    return refused("gives continuation token " + shown(page.next_token) + " again (page " +
                   std::to_string(at->second) +
                   " gave it): the store would list the same pages for ever");
  }
  return std::move(page.next_token);
}

}  // namespace conveyor

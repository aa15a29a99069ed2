#include "core/remote/s3_client.hpp"

#include <algorithm>
#include <thread>

#include "core/remote/xml_fields.hpp"

namespace conveyor {
namespace {

constexpr std::chrono::milliseconds backoff_cap{20000};

errc code_of(const s3_response& last) {
  if (last.failure == s3_failure::timeout) {
    return errc::timed_out;
  }
  if (last.status == 404) {
    return errc::not_found;
  }
  if (last.status == 403) {
    return errc::permission_denied;
  }
  return errc::io_error;
}

std::string_view text_of(const std::vector<std::uint8_t>& body) {
  return {reinterpret_cast<const char*>(body.data()), body.size()};
}

// A range GET into memory whose every byte has arrived, though its attempt failed after them
// (the connection broke, or the deadline passed, before the answer's end).
bool range_complete(const s3_request& r, const s3_response& attempt) {
  return r.range && r.into != nullptr && retryable(attempt.failure) &&
         attempt.range_bytes == r.range->second;
}

// A range GET into memory that received `bytes` more (fewer than it asked): the next attempt
// asks for the rest.
void resume_after(s3_request& r, std::uint64_t bytes) {
  if (!r.range || r.into == nullptr || bytes == 0) {
    return;
  }
  r.range->first += bytes;
  r.range->second -= bytes;
  r.into += bytes;
  r.received += bytes;
}

}  // namespace

error s3_error(const s3_request& r, const s3_response& last, int attempts) {
  std::string message = url_of(r) + ": " + last.detail;
  if (attempts > 1) {
    message += " (" + std::to_string(attempts) + " attempts)";
  }
  return error{code_of(last), message};
}

s3_client::s3_client(std::shared_ptr<const s3_access> access, const s3_settings& settings,
                     std::shared_ptr<transfer_counters> counters)
    : connection_(std::move(access), settings.request_timeout_ms),
      settings_(settings),
      counters_(std::move(counters)),
      jitter_(std::random_device{}()) {}

std::chrono::milliseconds s3_client::backoff(int attempt) {
  const auto ceiling =
      std::min<std::int64_t>(backoff_cap.count(), static_cast<std::int64_t>(settings_.backoff_ms)
                                                      << std::min(attempt, 20));
  std::uniform_int_distribution<std::int64_t> wait(0, std::max<std::int64_t>(ceiling, 1));
  return std::chrono::milliseconds(wait(jitter_));
}

expected<s3_response> s3_client::call(s3_request r) {
  for (int attempt = 0;; ++attempt) {
    auto response = connection_.perform(r);
    counters_->attempt(response.failure, response.body_bytes, r.payload_size);
    if (response.failure == s3_failure::none) {
      return response;
    }
    if (range_complete(r, response)) {
      response.failure = s3_failure::none;
      response.detail.clear();
      return response;
    }
    if (!retryable(response.failure) || attempt >= settings_.retries) {
      return s3_error(r, response, attempt + 1);
    }
    counters_->retry();
    resume_after(r, response.range_bytes);
    std::this_thread::sleep_for(backoff(attempt));
  }
}

expected<std::vector<std::uint8_t>> s3_client::get_object(const std::string& bucket,
                                                          const std::string& key,
                                                          std::uint64_t limit) {
  s3_request r;
  r.bucket = bucket;
  r.key = key;
  auto answer = call(r);
  if (!answer) {
    return std::move(answer).error();
  }
  if (answer->body.size() > limit) {
    return error{errc::invalid_argument, url_of(r) + ": " + std::to_string(answer->body.size()) +
                                             " bytes, more than the " + std::to_string(limit) +
                                             " such an object may have"};
  }
  return std::move(answer->body);
}

expected<void> s3_client::get_range(const std::string& bucket, const std::string& key,
                                    std::uint64_t offset, std::uint64_t size, std::uint8_t* into,
                                    std::function<void(std::uint64_t)> progress) {
  s3_request r;
  r.bucket = bucket;
  r.key = key;
  r.range = std::pair{offset, size};
  r.into = into;
  r.progress = std::move(progress);
  auto answer = call(std::move(r));
  if (!answer) {
    return std::move(answer).error();
  }
  return {};
}

expected<std::vector<listed_object>> s3_client::list(const std::string& bucket,
                                                     const std::string& prefix,
                                                     listing_bounds bounds) {
  const auto where = "s3://" + bucket + "/" + prefix;
  object_listing listing(where, bounds);
  std::string token;
  do {
    s3_request r;
    r.bucket = bucket;
    r.query = {{"list-type", "2"}, {"prefix", prefix}};
    if (!token.empty()) {
      r.query.emplace_back("continuation-token", token);
    }
    auto answer = call(r);
    if (!answer) {
      return std::move(answer).error();
    }
    auto page = parse_listing_page(text_of(answer->body), where);
    if (!page) {
      return std::move(page).error();
    }
    auto next = listing.add(std::move(*page));
    if (!next) {
      return std::move(next).error();
    }
    token = std::move(*next);
  } while (!token.empty());
  return std::move(listing).take();
}

expected<void> s3_client::put_object(const std::string& bucket, const std::string& key,
                                     const std::uint8_t* data, std::size_t size) {
  s3_request r;
  r.method = "PUT";
  r.bucket = bucket;
  r.key = key;
  r.payload = data;
  r.payload_size = size;
  auto answer = call(r);
  if (!answer) {
    return std::move(answer).error();
  }
  return {};
}

expected<void> s3_client::delete_object(const std::string& bucket, const std::string& key) {
  s3_request r;
  r.method = "DELETE";
  r.bucket = bucket;
  r.key = key;
  auto answer = call(r);
  if (!answer && answer.error().code() != errc::not_found) {
    return std::move(answer).error();
  }
  return {};
}

expected<std::string> s3_client::begin_upload(const std::string& bucket, const std::string& key) {
  s3_request r;
  r.method = "POST";
  r.bucket = bucket;
  r.key = key;
  r.query = {{"uploads", ""}};
  auto answer = call(r);
  if (!answer) {
    return std::move(answer).error();
  }
  auto id = xml_text(text_of(answer->body), "UploadId");
  if (!id || id->empty()) {
    return error{errc::io_error, url_of(r) + ": the answer to a multipart upload has no UploadId"};
  }
  return *id;
}

expected<std::string> s3_client::upload_part(const std::string& bucket, const std::string& key,
                                             const std::string& upload_id, int part,
                                             const std::uint8_t* data, std::size_t size) {
  s3_request r;
  r.method = "PUT";
  r.bucket = bucket;
  r.key = key;
  r.query = {{"partNumber", std::to_string(part)}, {"uploadId", upload_id}};
  r.payload = data;
  r.payload_size = size;
  auto answer = call(r);
  if (!answer) {
    return std::move(answer).error();
  }
  if (answer->etag.empty()) {
    return error{errc::io_error,
                 url_of(r) + ": part " + std::to_string(part) + " was answered without an ETag"};
  }
  return answer->etag;
}

expected<void> s3_client::complete_upload(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id,
                                          const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (std::size_t i = 0; i < etags.size(); ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] +
           "</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  s3_request r;
  r.method = "POST";
  r.bucket = bucket;
  r.key = key;
  r.query = {{"uploadId", upload_id}};
  r.payload = reinterpret_cast<const std::uint8_t*>(xml.data());
  r.payload_size = xml.size();
  r.headers = {{"content-type", "application/xml"}};
  auto answer = call(r);
  if (!answer) {
    return std::move(answer).error();
  }
  // S3 may answer 200 with an Error document when the completion failed late.
  if (auto code = xml_text(text_of(answer->body), "Code");
      code && xml_text(text_of(answer->body), "Message")) {
    return error{errc::io_error, url_of(r) + ": completing the upload failed: " + *code};
  }
  return {};
}

void s3_client::abort_upload(const std::string& bucket, const std::string& key,
                             const std::string& upload_id) {
  s3_request r;
  r.method = "DELETE";
  r.bucket = bucket;
  r.key = key;
  r.query = {{"uploadId", upload_id}};
  (void)call(r);
}

}  // namespace conveyor

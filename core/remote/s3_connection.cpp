#include "core/remote/s3_connection.hpp"

#include <curl/curl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>

#include "core/remote/aws_sigv4.hpp"
#include "core/remote/content_range.hpp"
#include "core/remote/xml_fields.hpp"

namespace conveyor {
namespace {

constexpr std::size_t max_answer_bytes = 64u << 20;

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Where the request goes: the host (the bucket's own name under virtual-host addressing) and
// the path, as signed (not encoded).
struct target {
  std::string host;
  std::string path;
};

target target_of(const s3_access& access, const s3_request& r) {
  const bool vhost = access.virtual_host && r.bucket.find('.') == std::string::npos;
  if (vhost) {
    return {r.bucket + "." + access.host, "/" + r.key};
  }
  return {access.host, "/" + r.bucket + (r.key.empty() ? "" : "/" + r.key)};
}

std::string query_string(const s3_request& r) {
  std::string out;
  for (const auto& [name, value] : r.query) {
    out += (out.empty() ? "?" : "&") + aws::uri_encode(name, false) + "=" +
           aws::uri_encode(value, false);
  }
  return out;
}

// The headers every request carries, signed: Host, x-amz-date, x-amz-content-sha256 and the
// session token of temporary credentials; then the request's own.
std::vector<std::pair<std::string, std::string>> signed_headers(const s3_access& access,
                                                                const s3_request& r,
                                                                const target& t,
                                                                const std::string& payload_hash,
                                                                const std::string& timestamp) {
  std::vector<std::pair<std::string, std::string>> h = {
      {"host", t.host}, {"x-amz-content-sha256", payload_hash}, {"x-amz-date", timestamp}};
  if (!access.credentials.session_token.empty()) {
    h.emplace_back("x-amz-security-token", access.credentials.session_token);
  }
  for (const auto& extra : r.headers) {
    h.push_back(extra);
  }
  return h;
}

s3_failure failure_of_status(long status) {
  if (status >= 200 && status < 300) {
    return s3_failure::none;
  }
  if (status == 503 || status == 429) {
    return s3_failure::throttled;
  }
  if (status >= 500 || status == 408) {
    return s3_failure::server_error;
  }
  return status >= 400 ? s3_failure::client_error : s3_failure::garbage;
}

s3_failure failure_of_curl(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return s3_failure::timeout;
    case CURLE_COULDNT_CONNECT:
      return s3_failure::refused;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return s3_failure::reset;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_WRITE_ERROR:
      return s3_failure::garbage;
    default:
      return s3_failure::fatal;
  }
}

// "HTTP 404 NoSuchKey: The specified key does not exist." from an S3 error body.
std::string status_detail(long status, const std::vector<std::uint8_t>& body) {
  std::string_view xml(reinterpret_cast<const char*>(body.data()), body.size());
  auto code = xml_text(xml, "Code");
  auto message = xml_text(xml, "Message");
  std::string out = "HTTP " + std::to_string(status);
  if (code) {
    out += " " + *code;
  } else if (!body.empty()) {
    out += " (an answer that is not an S3 error document)";
  }
  if (message) {
    out += ": " + *message;
  }
  return out;
}

// The value of header `name` (lower case, without the colon) if `line` is that header's.
std::optional<std::string_view> header_value(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':' ||
      strncasecmp(line.data(), name.data(), name.size()) != 0) {
    return std::nullopt;
  }
  auto value = line.substr(name.size() + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  return value;
}

// The blank line that ends an answer's headers.
bool ends_headers(std::string_view line) {
  return line == "\r\n" || line == "\n";
}

}  // namespace

struct s3_connection::impl {
  CURL* curl = nullptr;
  // Per request:
  const s3_request* request = nullptr;
  s3_response* response = nullptr;
  /// Why the transfer was aborted from a callback ("" when it was not): an answer that is not
  /// believed, whatever libcurl then says.
  std::string refusal;
  /// The current answer's Content-Range, once its header has come.
  std::optional<std::string> content_range;

  long status() const {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* self_ptr) {
    auto& self = *static_cast<impl*>(self_ptr);
    const std::size_t bytes = size * n;
    const long status = self.status();
    auto& out = *self.response;
    const auto& r = *self.request;
    // The range's bytes: a 206 (whose Content-Range on_header checked), or a 200 (the whole
    // object) for a range from its first byte. Any other answer's body is kept apart (an
    // error's XML, or garbage), never in `into`.
    if (r.into != nullptr && r.range && (status == 206 || (status == 200 && r.range->first == 0))) {
      if (out.body_bytes + bytes > r.range->second) {
        self.refusal = "the server sent more than was asked for";
        return 0;  // more than the range: abort (CURLE_WRITE_ERROR)
      }
      std::memcpy(r.into + out.body_bytes, data, bytes);
      out.range_bytes += bytes;
      if (r.progress) {
        r.progress(r.received + out.range_bytes);
      }
    } else {
      if (out.body.size() + bytes > max_answer_bytes) {
        self.refusal = "the server sent more than was asked for";
        return 0;
      }
      out.body.insert(out.body.end(), data, data + bytes);
    }
    out.body_bytes += bytes;
    return bytes;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self_ptr) {
    auto& self = *static_cast<impl*>(self_ptr);
    const std::size_t bytes = size * n;
    const std::string_view line(data, bytes);
    if (line.rfind("HTTP/", 0) == 0) {  // the status line of an answer (another, after a 1xx)
      self.content_range.reset();
    } else if (auto etag = header_value(line, "etag")) {
      self.response->etag = std::string(*etag);
    } else if (auto range = header_value(line, "content-range")) {
      self.content_range = std::string(*range);
    } else if (ends_headers(line) && !self.range_believed()) {
      return 0;  // abort (CURLE_WRITE_ERROR) before a byte of the body is taken
    }
    return bytes;
  }

  // At the end of an answer's headers: false, and why in `refusal`, for a 206 to a range GET
  // into memory whose Content-Range is not the range asked.
  bool range_believed() {
    const auto& r = *request;
    if (status() != 206 || !r.range || r.into == nullptr) {
      return true;
    }
    auto why = content_range_mismatch(content_range, r.range->first, r.range->second);
    if (why) {
      refusal = std::move(*why);
    }
    return refusal.empty();
  }
};

s3_connection::s3_connection(std::shared_ptr<const s3_access> access, int timeout_ms)
    : access_(std::move(access)), timeout_ms_(timeout_ms), impl_(std::make_unique<impl>()) {
  init_curl_once();
  impl_->curl = curl_easy_init();
}

s3_connection::~s3_connection() {
  if (impl_->curl != nullptr) {
    curl_easy_cleanup(impl_->curl);
  }
}

std::string url_of(const s3_request& r) {
  return "s3://" + r.bucket + (r.key.empty() ? "" : "/" + r.key);
}

s3_response s3_connection::perform(const s3_request& r) {
  s3_response out;
  CURL* curl = impl_->curl;
  if (curl == nullptr) {
    out.failure = s3_failure::fatal;
    out.detail = "libcurl could not make a handle";
    return out;
  }
  curl_easy_reset(curl);  // options only: the connection stays alive
  impl_->request = &r;
  impl_->response = &out;
  impl_->refusal.clear();
  impl_->content_range.reset();

  const auto t = target_of(*access_, r);
  const auto payload_hash = r.payload != nullptr || r.payload_size > 0
                                ? aws::sha256_hex(r.payload, r.payload_size)
                                : std::string(aws::empty_payload_sha256);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  aws::signing_scope scope{aws::amz_timestamp(now), access_->region, "s3"};
  aws::signable_request signable{r.method, t.path, r.query,
                                 signed_headers(*access_, r, t, payload_hash, scope.timestamp),
                                 payload_hash};
  const auto authorization = aws::authorization(access_->credentials.access_key,
                                                access_->credentials.secret_key, scope, signable);
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : signable.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, ("Authorization: " + authorization).c_str());
  headers = curl_slist_append(headers, "Expect:");
  if (r.range) {
    headers = curl_slist_append(headers, ("Range: bytes=" + std::to_string(r.range->first) + "-" +
                                          std::to_string(r.range->first + r.range->second - 1))
                                             .c_str());
  }
  if (r.payload_size > 0 || r.method == "PUT" || r.method == "POST") {
    bool typed = false;
    for (const auto& h : r.headers) {
      typed = typed || strcasecmp(h.first.c_str(), "content-type") == 0;
    }
    if (!typed) {
      headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    }
  }
  const auto url =
      access_->scheme + "://" + t.host + aws::uri_encode(t.path, true) + query_string(r);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms_));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(timeout_ms_, 10000)));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &impl::on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, impl_.get());
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &impl::on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, impl_.get());
  if (r.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (r.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS,
                     r.payload_size > 0 ? reinterpret_cast<const char*>(r.payload) : "");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.payload_size));
  }
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.status);
  if (code != CURLE_OK) {
    const bool refused = !impl_->refusal.empty();
    out.failure = refused ? s3_failure::garbage : failure_of_curl(code);
    out.detail = refused ? impl_->refusal : std::string(curl_easy_strerror(code));
    if (out.failure == s3_failure::garbage && !refused) {
      out.detail = "an answer that is not HTTP (libcurl: " + out.detail + ")";
    }
    if (out.status != 0) {
      out.detail += " (after HTTP " + std::to_string(out.status) + ")";
    }
    return out;
  }
  out.failure = failure_of_status(out.status);
  if (out.failure != s3_failure::none) {
    out.detail = status_detail(out.status, out.body);
    return out;
  }
  if (r.range && r.into != nullptr && out.body_bytes != r.range->second) {
    out.failure = out.body_bytes < r.range->second ? s3_failure::reset : s3_failure::garbage;
    out.detail = "HTTP " + std::to_string(out.status) + " with " + std::to_string(out.body_bytes) +
                 " bytes for a range of " + std::to_string(r.range->second);
  } else if (r.range && out.status == 200 && r.range->first != 0) {
    out.failure = s3_failure::garbage;
    out.detail = "HTTP 200 (the whole object) for a range request";
  }
  return out;
}

}  // namespace conveyor

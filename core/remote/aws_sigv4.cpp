#include "core/remote/aws_sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

namespace conveyor::aws {
namespace {

std::string hex(const unsigned char* bytes, std::size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string hmac(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  ::HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

bool unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Leading and trailing blanks dropped, inner runs of blanks (and folded lines) one space.
std::string trimmed(const std::string& value) {
  std::string out;
  bool blank = false;
  for (unsigned char c : value) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      blank = !out.empty();
      continue;
    }
    if (blank) {
      out += ' ';
      blank = false;
    }
    out += static_cast<char>(c);
  }
  return out;
}

// Lowercased names in order, the values of a name named twice joined with ','.
std::map<std::string, std::string> canonical_header_map(const signable_request& r) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : r.headers) {
    auto& slot = out[lower(name)];
    slot += (slot.empty() ? "" : ",") + trimmed(value);
  }
  return out;
}

std::string canonical_query(const signable_request& r) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [name, value] : r.query) {
    encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    out += (out.empty() ? "" : "&") + name + "=" + value;
  }
  return out;
}

}  // namespace

std::string signing_scope::credential_scope() const {
  return date() + "/" + region + "/" + service + "/aws4_request";
}

std::string uri_encode(const std::string& text, bool keep_slash) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string signed_headers(const signable_request& r) {
  std::string out;
  for (const auto& entry : canonical_header_map(r)) {
    out += (out.empty() ? "" : ";") + entry.first;
  }
  return out;
}

std::string canonical_request(const signable_request& r) {
  std::string headers;
  for (const auto& [name, value] : canonical_header_map(r)) {
    headers += name + ":" + value + "\n";
  }
  return r.method + "\n" + uri_encode(r.path.empty() ? "/" : r.path, true) + "\n" +
         canonical_query(r) + "\n" + headers + "\n" + signed_headers(r) + "\n" + r.payload_hash;
}

std::string string_to_sign(const signing_scope& scope, const std::string& canonical) {
  return "AWS4-HMAC-SHA256\n" + scope.timestamp + "\n" + scope.credential_scope() + "\n" +
         sha256_hex(canonical.data(), canonical.size());
}

std::string signature(const std::string& secret_key, const signing_scope& scope,
                      const std::string& to_sign) {
  auto key = hmac("AWS4" + secret_key, scope.date());
  key = hmac(key, scope.region);
  key = hmac(key, scope.service);
  key = hmac(key, "aws4_request");
  auto mac = hmac(key, to_sign);
  return hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

std::string authorization(const std::string& access_key, const std::string& secret_key,
                          const signing_scope& scope, const signable_request& r) {
  auto to_sign = string_to_sign(scope, canonical_request(r));
  return "AWS4-HMAC-SHA256 Credential=" + access_key + "/" + scope.credential_scope() +
         ", SignedHeaders=" + signed_headers(r) +
         ", Signature=" + signature(secret_key, scope, to_sign);
}

std::string sha256_hex(const void* data, std::size_t size) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, size, out, &n, EVP_sha256(), nullptr);
  return hex(out, n);
}

std::string amz_timestamp(long long seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[20];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

}  // namespace conveyor::aws

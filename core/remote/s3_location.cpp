#include "core/remote/s3_location.hpp"

#include <cctype>

namespace conveyor {
namespace {

constexpr const char* scheme = "s3://";

bool valid_bucket(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) {
    return false;
  }
  auto edge = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!edge(b.front()) || !edge(b.back())) {
    return false;
  }
  for (char c : b) {
    if (!edge(c) && c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string s3_location::key(const std::string& name) const {
  return prefix.empty() ? name : prefix + "/" + name;
}

std::string s3_location::url(const std::string& k) const {
  return scheme + bucket + "/" + k;
}

std::string s3_location::url() const {
  return prefix.empty() ? scheme + bucket : scheme + bucket + "/" + prefix;
}

bool is_s3_url(const std::string& path) noexcept {
  return path.rfind(scheme, 0) == 0;
}

expected<s3_location> parse_s3_url(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return error{errc::invalid_argument, "\"" + url + "\" is not an s3:// address: " + why};
  };
  if (!is_s3_url(url)) {
    return bad("it must start with s3://");
  }
  auto rest = url.substr(std::string(scheme).size());
  auto slash = rest.find('/');
  s3_location out;
  out.bucket = rest.substr(0, slash);
  if (!valid_bucket(out.bucket)) {
    return bad("the bucket \"" + out.bucket +
               "\" is not a bucket name (3 to 63 of a-z, 0-9, '.' and '-', starting and ending "
               "with a letter or digit)");
  }
  if (slash != std::string::npos) {
    out.prefix = rest.substr(slash + 1);
    while (!out.prefix.empty() && out.prefix.back() == '/') {
      out.prefix.pop_back();
    }
    if (out.prefix.find("//") != std::string::npos ||
        (!out.prefix.empty() && out.prefix[0] == '/')) {
      return bad("the prefix \"" + out.prefix + "\" has an empty segment");
    }
  }
  return out;
}

}  // namespace conveyor

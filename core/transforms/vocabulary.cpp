#include "core/transforms/vocabulary.hpp"

#include <algorithm>
#include <cstdio>

#include "core/base/bounded_file.hpp"
#include "core/codecs/txt_decoder.hpp"

namespace conveyor {
namespace {

constexpr std::size_t max_file_bytes = std::size_t{64} << 20;

/// Bytes of the UTF-8 sequence that begins with `lead` (1 for a stray byte).
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xF0) {
    return 4;
  }
  if (lead >= 0xE0) {
    return 3;
  }
  return lead >= 0xC0 ? 2 : 1;
}

/// The code point of the well-formed UTF-8 sequence at `s`, for messages.
std::uint32_t code_point(std::string_view s) {
  const auto lead = static_cast<unsigned char>(s[0]);
  const std::size_t n = std::min(sequence_length(lead), s.size());
  static constexpr unsigned char lead_mask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  std::uint32_t cp = lead & lead_mask[n];
  for (std::size_t i = 1; i < n; ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3FU);
  }
  return cp;
}

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view stripped(std::string_view text) {
  while (!text.empty() && ascii_space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && ascii_space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

expected<vocabulary> vocabulary::build(const std::vector<std::string>& tokens,
                                       const std::string& context, std::string_view unit,
                                       std::size_t first) {
  if (tokens.empty()) {
    return error{errc::invalid_config, context + "no tokens"};
  }
  auto name = [&](std::size_t i) {
    return context + std::string(unit) + std::to_string(i + first);
  };
  vocabulary v;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto& token = tokens[i];
    if (token.empty()) {
      return error{errc::invalid_config,
                   name(i) + " is empty (a space token is a line holding one space)"};
    }
    if (auto ok = check_utf8(reinterpret_cast<const std::uint8_t*>(token.data()), token.size());
        !ok) {
      return error{errc::invalid_config, name(i) + " is not UTF-8: " + ok.error().message()};
    }
    auto [at, fresh] = v.ids_.emplace(token, static_cast<std::int32_t>(i));
    if (!fresh) {
      return error{errc::invalid_config,
                   name(i) + " repeats " + std::string(unit) +
                       std::to_string(static_cast<std::size_t>(at->second) + first) + " ('" +
                       token + "')"};
    }
    v.longest_ = std::max(v.longest_, token.size());
  }
  v.count_ = tokens.size();
  return v;
}

expected<vocabulary> vocabulary::of(const std::vector<std::string>& tokens) {
  return build(tokens, "", "token ", 0);
}

expected<vocabulary> vocabulary::load(const std::string& path) {
  const std::string context = "vocabulary " + path + ": ";
  auto read = read_bounded_file(path, max_file_bytes);
  if (!read) {
    return error{errc::invalid_config, "vocabulary " + read.error().message()};
  }
  const std::string& text = *read;
  std::vector<std::string> tokens;
  for (std::size_t at = 0; at < text.size();) {
    auto end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    tokens.push_back(std::move(line));
    at = end + 1;
  }
  return build(tokens, context, "line ", 1);
}

expected<std::vector<std::int32_t>> vocabulary::encode(std::string_view text,
                                                       bool lowercase) const {
  const std::string_view kept = stripped(text);
  std::string lowered;
  std::string_view s = kept;
  if (lowercase) {
    lowered.assign(kept);
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    s = lowered;
  }
  std::vector<std::int32_t> out;
  out.reserve(s.size());
  std::string probe;
  for (std::size_t at = 0; at < s.size();) {
    bool found = false;
    for (std::size_t n = std::min(longest_, s.size() - at); n > 0 && !found; --n) {
      probe.assign(s.substr(at, n));
      if (auto it = ids_.find(probe); it != ids_.end()) {
        out.push_back(it->second);
        at += n;
        found = true;
      }
    }
    if (!found) {
      const auto n = std::min(sequence_length(static_cast<unsigned char>(s[at])), s.size() - at);
      char cp[16];
      std::snprintf(cp, sizeof cp, "U+%04X", code_point(s.substr(at, n)));
      const auto offset = at + static_cast<std::size_t>(kept.data() - text.data());
      return error{errc::invalid_argument, "no token for '" + std::string(s.substr(at, n)) + "' (" +
                                               cp + ") at byte " + std::to_string(offset)};
    }
  }
  return out;
}

}  // namespace conveyor

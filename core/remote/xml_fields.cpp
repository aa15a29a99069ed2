#include "core/remote/xml_fields.hpp"

namespace conveyor {
namespace {

// &amp; &lt; &gt; &quot; &apos; and numeric references below 128 decoded; others kept.
std::string decoded(std::string_view text) {
  static const std::pair<std::string_view, char> named[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    bool done = false;
    if (text[i] == '&') {
      for (const auto& [entity, c] : named) {
        if (text.substr(i, entity.size()) == entity) {
          out += c;
          i += entity.size();
          done = true;
          break;
        }
      }
      auto end = text.find(';', i);
      if (!done && text.substr(i, 2) == "&#" && end != std::string_view::npos && end - i < 8) {
        unsigned value = 0;
        bool ok = end > i + 2;
        for (auto k = i + 2; k < end; ++k) {
          ok = ok && text[k] >= '0' && text[k] <= '9';
          value = value * 10 + static_cast<unsigned>(text[k] - '0');
        }
        if (ok && value < 128) {
          out += static_cast<char>(value);
          i = end + 1;
          done = true;
        }
      }
    }
    if (!done) {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag);
  const std::string close = "</" + std::string(tag) + ">";
  std::size_t at = 0;
  while ((at = xml.find(open, at)) != std::string_view::npos) {
    auto after = at + open.size();
    if (after >= xml.size() || (xml[after] != '>' && xml[after] != ' ')) {
      at = after;  // <Keys> is not <Key>
      continue;
    }
    auto start = xml.find('>', after);
    if (start == std::string_view::npos) {
      break;
    }
    auto end = xml.find(close, start + 1);
    if (end == std::string_view::npos) {
      break;
    }
    out.push_back(xml.substr(start + 1, end - start - 1));
    at = end + close.size();
  }
  return out;
}

std::vector<std::string> xml_texts(std::string_view xml, std::string_view tag) {
  std::vector<std::string> out;
  for (auto element : xml_elements(xml, tag)) {
    out.push_back(decoded(element));
  }
  return out;
}

std::optional<std::string> xml_text(std::string_view xml, std::string_view tag) {
  auto all = xml_elements(xml, tag);
  if (all.empty()) {
    return std::nullopt;
  }
  return decoded(all.front());
}

}  // namespace conveyor

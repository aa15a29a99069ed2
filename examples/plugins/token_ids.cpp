#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "example_steps.hpp"

namespace example {
namespace {

using vocabulary = std::unordered_map<std::string, std::int32_t>;

vocabulary read_vocabulary(const conveyor::step_params& p) {
  const auto path = p.string("vocabulary");
  std::ifstream in(path);
  if (!in) {
    p.fail("vocabulary", "cannot read '" + path + "'");
  }
  vocabulary words;
  std::int32_t id = 0;
  for (std::string line; std::getline(in, line); ++id) {
    words.emplace(line, id);
  }
  return words;
}

class token_ids final : public conveyor::step {
 public:
  explicit token_ids(const conveyor::step_params& p)
      : from_(p.string("from", "txt")),
        to_(p.string("to", "tokens")),
        unknown_(static_cast<std::int32_t>(p.integer("unknown", 0, 0, INT32_MAX))),
        words_(read_vocabulary(p)) {}

  conveyor::step_declaration declare() const override {
    return {{{from_, conveyor::dtype::uint8, 1}},
            {{to_, conveyor::dtype::int32, 1}},
            conveyor::cost_hint::per_element_of(from_)};
  }

  void apply(conveyor::sample_view& s, std::mt19937_64& /*rng*/) const override {
    auto text = s.read(from_);
    const auto* bytes = reinterpret_cast<const char*>(text.data<std::uint8_t>());
    std::vector<std::int32_t> ids;
    std::string word;
    auto flush = [&] {
      if (!word.empty()) {
        auto it = words_.find(word);
        ids.push_back(it == words_.end() ? unknown_ : it->second);
        word.clear();
      }
    };
    for (std::size_t i = 0; i < text.element_count(); ++i) {
      const char c = bytes[i];
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        flush();
      } else {
        word += c;
      }
    }
    flush();
    auto out = s.make(to_, conveyor::dtype::int32, {static_cast<std::int64_t>(ids.size())});
    std::copy(ids.begin(), ids.end(), out.data<std::int32_t>());
  }

 private:
  std::string from_;
  std::string to_;
  std::int32_t unknown_;
  vocabulary words_;
};

}  // namespace

std::unique_ptr<conveyor::step> make_token_ids(const conveyor::step_params& params) {
  return std::make_unique<token_ids>(params);
}

}  // namespace example

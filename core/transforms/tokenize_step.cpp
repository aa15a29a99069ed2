// The tokenize step: a transcript (a byte string field) -> int32 token ids by a vocabulary
// file (vocabulary.hpp), loaded once when the chain is built.

#include <memory>

#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"
#include "core/transforms/vocabulary.hpp"

namespace conveyor {
namespace {

class tokenize_step final : public transform_step {
 public:
  tokenize_step(std::size_t from, std::size_t to, std::shared_ptr<const vocabulary> words,
                bool lowercase)
      : from_(from), to_(to), words_(std::move(words)), lowercase_(lowercase) {}
  std::string_view name() const noexcept override { return tokenize_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const auto& text = sample.fields[from_].array;
    const std::string_view view(reinterpret_cast<const char*>(text.bytes.data()),
                                text.bytes.size());
    auto ids = words_->encode(view, lowercase_);
    if (!ids) {
      return sample_error(errc::transform_error, sample, name(),
                          "its transcript: " + ids.error().message());
    }
    auto out = host_array::uninitialized(dtype::int32, {static_cast<std::int64_t>(ids->size())});
    std::copy(ids->begin(), ids->end(), out.data<std::int32_t>());
    sample.fields[to_].set(std::move(out));
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  std::size_t from_;
  std::size_t to_;
  std::shared_ptr<const vocabulary> words_;
  bool lowercase_;
};

}  // namespace

expected<void> check_params(const tokenize_spec& spec) {
  if (spec.from.empty() || spec.to.empty()) {
    return invalid_spec(tokenize_spec::op, "from and to must name fields");
  }
  if (spec.vocabulary.empty()) {
    return invalid_spec(tokenize_spec::op,
                        "vocabulary must name a file of tokens, one per line (its id: the line's "
                        "number from 0)");
  }
  return {};
}

expected<step_ptr> make_step(const tokenize_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto from = fields.read(spec.from);
  if (!from) {
    return std::move(from).error();
  }
  if (fields.type(*from).kind != field_kind::bytes) {
    return error{errc::invalid_config, "tokenize: field '" + spec.from + "' is " +
                                           describe(fields.type(*from)) + " (made by " +
                                           fields.made_by(*from) +
                                           "); it needs a byte string (a txt part's decode)"};
  }
  auto words = vocabulary::load(spec.vocabulary);
  if (!words) {
    return error{errc::invalid_config, "tokenize: " + words.error().message()};
  }
  field_type type{field_kind::tensor, dtype::int32, 1, {}};
  type.shape[0] = varies;
  const auto to = fields.write(spec.to, type);
  return step_ptr(std::make_unique<tokenize_step>(
      *from, to, std::make_shared<const vocabulary>(std::move(*words)), spec.lowercase));
}

}  // namespace conveyor

#include <algorithm>
#include <random>

#include "example_steps.hpp"

namespace example {
namespace {

class salt_pepper final : public conveyor::step {
 public:
  explicit salt_pepper(const conveyor::step_params& p)
      : amount_(p.number("amount", 0.02, 0.0, 1.0)), field_(p.string("field", "image")) {}

  conveyor::step_declaration declare() const override {
    return {{{field_, conveyor::dtype::uint8, 3}},
            {{field_, conveyor::dtype::uint8, 3, field_}},
            conveyor::cost_hint::per_element_of(field_)};
  }

  void apply(conveyor::sample_view& s, std::mt19937_64& rng) const override {
    auto in = s.read(field_);
    auto out = s.make(field_, conveyor::dtype::uint8, {in.shape[0], in.shape[1], in.shape[2]});
    const auto channels = static_cast<std::size_t>(in.shape[2]);
    const auto* from = in.data<std::uint8_t>();
    auto* to = out.data<std::uint8_t>();
    std::copy(from, from + in.element_count(), to);
    std::uniform_real_distribution<double> draw(0.0, 1.0);
    for (std::size_t pixel = 0; pixel < in.element_count() / channels; ++pixel) {
      const double u = draw(rng);
      if (u < amount_) {
        std::fill_n(to + pixel * channels, channels, u < amount_ / 2 ? 0 : 255);
      }
    }
  }

 private:
  double amount_;
  std::string field_;
};

}  // namespace

std::unique_ptr<conveyor::step> make_salt_pepper(const conveyor::step_params& params) {
  return std::make_unique<salt_pepper>(params);
}

}  // namespace example

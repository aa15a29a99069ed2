// A node plugin for the tests: two steps built only against include/conveyor/step.hpp.
//   invert:      image (uint8 [h, w, c]) -> 255 - image, same shape (an image stays an image)
//   label_plus:  label (int32 scalar) -> field `to` (int32 scalar) = label + `add`
#include <conveyor/step.hpp>

namespace {

class invert final : public conveyor::step {
 public:
  conveyor::step_declaration declare() const override {
    return {{{"image", conveyor::dtype::uint8, 3}},
            {{"image", conveyor::dtype::uint8, 3, "image"}},
            conveyor::cost_hint::per_element_of("image")};
  }
  void apply(conveyor::sample_view& s, std::mt19937_64& /*rng*/) const override {
    auto in = s.read("image");
    auto out = s.make("image", conveyor::dtype::uint8, {in.shape[0], in.shape[1], in.shape[2]});
    const auto* from = in.data<std::uint8_t>();
    auto* to = out.data<std::uint8_t>();
    for (std::size_t i = 0; i < in.element_count(); ++i) {
      to[i] = static_cast<std::uint8_t>(255 - from[i]);
    }
  }
};

class label_plus final : public conveyor::step {
 public:
  explicit label_plus(const conveyor::step_params& p)
      : add_(static_cast<std::int32_t>(p.integer("add", 1, -1000, 1000))),
        to_(p.string("to", "label_plus")) {}
  conveyor::step_declaration declare() const override {
    return {{{"label", conveyor::dtype::int32, 0}}, {{to_, conveyor::dtype::int32, 0}}, {}};
  }
  void apply(conveyor::sample_view& s, std::mt19937_64& /*rng*/) const override {
    auto label = *s.read("label").data<std::int32_t>();
    *s.make(to_, conveyor::dtype::int32, {}).data<std::int32_t>() = label + add_;
  }

 private:
  std::int32_t add_;
  std::string to_;
};

void register_test_steps(conveyor::step_registrar& r) {
  r.add("invert", [](const conveyor::step_params&) { return std::make_unique<invert>(); });
  r.add("label_plus",
        [](const conveyor::step_params& p) { return std::make_unique<label_plus>(p); });
}

}  // namespace

CONVEYOR_PLUGIN(register_test_steps)

// api_flip: the built-in flip step (core/transforms/flip_step.cpp) written against the public
// step API (include/conveyor/step.hpp), for bench/user_steps.sh: the same draw (u ~ U[0, 1),
// mirrored when u < p) and the same output (a new image, its columns reversed), so that the
// two chains differ only in the path a step takes through Conveyor.
#include <conveyor/step.hpp>

#include <algorithm>
#include <cstring>
#include <random>

namespace {

class api_flip final : public conveyor::step {
 public:
  explicit api_flip(const conveyor::step_params& p) : p_(p.number("p", 0.5, 0.0, 1.0)) {}

  conveyor::step_declaration declare() const override {
    return {{{"image", conveyor::dtype::uint8, 3}},
            {{"image", conveyor::dtype::uint8, 3, "image"}},
            conveyor::cost_hint::per_element_of("image")};
  }

  void apply(conveyor::sample_view& s, std::mt19937_64& rng) const override {
    if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= p_) {
      return;  // the field stays as it is
    }
    auto in = s.read("image");
    const auto rows = in.shape[0], cols = in.shape[1], channels = in.shape[2];
    auto out = s.make("image", conveyor::dtype::uint8, {rows, cols, channels});
    const auto* from = in.data<std::uint8_t>();
    auto* to = out.data<std::uint8_t>();
    const auto pixel = static_cast<std::size_t>(channels);
    for (std::int64_t y = 0; y < rows; ++y) {
      const auto* row = from + static_cast<std::size_t>(y * cols) * pixel;
      auto* dest = to + static_cast<std::size_t>(y * cols) * pixel;
      for (std::int64_t x = 0; x < cols; ++x) {
        std::memcpy(dest + static_cast<std::size_t>(cols - 1 - x) * pixel,
                    row + static_cast<std::size_t>(x) * pixel, pixel);
      }
    }
  }

 private:
  double p_;
};

void register_steps(conveyor::step_registrar& registrar) {
  registrar.add("api_flip", [](const conveyor::step_params& p) -> std::unique_ptr<conveyor::step> {
    return std::make_unique<api_flip>(p);
  });
}

}  // namespace

CONVEYOR_PLUGIN(register_steps)

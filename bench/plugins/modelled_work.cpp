// modelled_work: a preprocessing cost that takes time but no CPU, for bench/scaling_model.sh.
// A sample's work is a wait of `small_ms`, or `large_ms` for an image with more than
// `large_above` elements, after which it makes the image anew (the same pixels: a step's output
// is a new array, as the built-in steps' are). A `resize` after it gives the recipe's shape. A node
// with P preprocessors on any machine then behaves as one with P cores whose preparation costs what
// the model says, while what it does besides (reading, dispatching, batching, collating into the
// ring) runs for real on the cores there are: the node's structural losses at a rate the machine's
// own cores could not reach.
#include <conveyor/step.hpp>

#include <chrono>
#include <cstring>
#include <thread>

namespace {

class modelled_work final : public conveyor::step {
 public:
  explicit modelled_work(const conveyor::step_params& p)
      : small_ms_(p.number("small_ms", 2.0, 0.0, 10000.0)),
        large_ms_(p.number("large_ms", 20.0, 0.0, 10000.0)),
        large_above_(p.integer("large_above", 3000, 0)) {}

  conveyor::step_declaration declare() const override {
    return {{{"image", conveyor::dtype::uint8, 3}},
            {{"image", conveyor::dtype::uint8, 3, "image"}},
            conveyor::cost_hint::per_element_of("image")};
  }

  void apply(conveyor::sample_view& s, std::mt19937_64& /*rng*/) const override {
    auto in = s.read("image");
    const auto elements = static_cast<std::int64_t>(in.shape.element_count());
    const double ms = elements > large_above_ ? large_ms_ : small_ms_;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    auto out = s.make("image", conveyor::dtype::uint8, {in.shape[0], in.shape[1], in.shape[2]});
    std::memcpy(out.data<std::uint8_t>(), in.data<std::uint8_t>(),
                static_cast<std::size_t>(elements));
  }

 private:
  double small_ms_;
  double large_ms_;
  std::int64_t large_above_;
};

void register_steps(conveyor::step_registrar& registrar) {
  registrar.add("modelled_work",
                [](const conveyor::step_params& p) -> std::unique_ptr<conveyor::step> {
                  return std::make_unique<modelled_work>(p);
                });
}

}  // namespace

CONVEYOR_PLUGIN(register_steps)

// The flip step: a horizontal flip with probability p.

#include <opencv2/core.hpp>

#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

class flip_step final : public image_step {
 public:
  explicit flip_step(double p) : p_(p) {}

  std::string_view name() const noexcept override { return flip_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const override {
    // U(0,1) < p: p == 1 always flips, p == 0 never does.
    if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= p_) {
      return {};
    }
    cv::Mat out;
    cv::flip(sample.image, out, 1);
    sample.image = std::move(out);
    return {};
  }

 private:
  double p_;
};

}  // namespace

expected<step_ptr> make_step(const flip_spec& spec) {
  if (!(spec.p >= 0.0 && spec.p <= 1.0)) {  // written so that NaN fails too
    return invalid_spec(flip_spec::op, "p must be in [0, 1] (got " + format_number(spec.p) + ")");
  }
  return step_ptr(std::make_unique<flip_step>(spec.p));
}

}  // namespace conveyor

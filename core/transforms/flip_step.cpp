// The flip step: a horizontal flip with probability p, of an image and what follows it.

#include <opencv2/core.hpp>

#include "core/transforms/geometry_followers.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

class flip_step final : public image_step {
 public:
  flip_step(double p, std::size_t image, geometry_followers followers)
      : image_step(image), p_(p), followers_(std::move(followers)) {}

  std::string_view name() const noexcept override { return flip_spec::op; }

 protected:
  expected<void> apply_to_image(sample_state& sample, std::mt19937_64& rng) const override {
    // U(0,1) < p: p == 1 always flips, p == 0 never does. One draw for image and followers.
    if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) >= p_) {
      return {};
    }
    cv::Mat& in = image(sample);
    cv::Mat out;
    cv::flip(in, out, 1);
    followers_.flip(sample, in.cols);
    in = std::move(out);
    return {};
  }

 private:
  double p_;
  geometry_followers followers_;
};

}  // namespace

expected<void> check_params(const flip_spec& spec) {
  if (!(spec.p >= 0.0 && spec.p <= 1.0)) {  // written so that NaN fails too
    return invalid_spec(flip_spec::op, "p must be in [0, 1] (got " + format_number(spec.p) + ")");
  }
  return {};
}

expected<step_ptr> make_step(const flip_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_geometry(spec.fields, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  return step_ptr(std::make_unique<flip_step>(spec.p, bound->image, std::move(bound->followers)));
}

}  // namespace conveyor

#include "core/transforms/transform_step.hpp"

#include <new>

#include <opencv2/core.hpp>

#include "core/base/sample_seed.hpp"

namespace conveyor {

expected<void> image_step::apply(sample_state& sample, std::mt19937_64& rng) const {
  if (!sample.fields[image_field_].is_image()) {
    return sample_error(errc::transform_error, sample, name(),
                        "no image in its field (a decode step must come first)");
  }
  try {
    return apply_to_image(sample, rng);
  } catch (const cv::Exception& e) {
    return sample_error(errc::transform_error, sample, name(), std::string("OpenCV: ") + e.what());
  } catch (const std::bad_alloc&) {
    return sample_error(errc::transform_error, sample, name(), "out of memory");
  }
}

expected<void> check_params(const transform_spec& spec) {
  return std::visit([](const auto& s) { return check_params(s); }, spec);
}

expected<step_ptr> make_step(const transform_spec& spec, chain_fields& fields,
                             const transform_spec* next) {
  return std::visit(
      [&](const auto& s) -> expected<step_ptr> {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, decode_spec>) {
          return make_step(s, fields, next);
        } else {
          return make_step(s, fields);
        }
      },
      spec);
}

std::mt19937_64 step_rng(const sample_state& sample, std::size_t step_index) {
  return std::mt19937_64(step_seed(sample.epoch_seed, sample.sample_id, step_index));
}

std::string sample_location(const sample_state& sample) {
  return "sample " + std::to_string(sample.sample_id) + " (key '" + sample.key + "')";
}

error sample_error(errc code, const sample_state& sample, std::string_view step,
                   std::string_view what) {
  std::string message = sample_location(sample) + ", step " + std::string(step) + ": ";
  message += what;
  return error(code, std::move(message));
}

}  // namespace conveyor

// The decode step: encoded bytes -> RGB image.

#include "core/jpeg_decoder.hpp"
#include "core/transform_step.hpp"

namespace conveyor {
namespace {

class decode_step final : public transform_step {
 public:
  explicit decode_step(const decode_spec& spec) { options_.strict = spec.strict; }

  std::string_view name() const noexcept override { return decode_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    auto image = decode_image(sample.encoded, options_);
    if (!image) {
      return sample_error(image.error().code(), sample, name(), image.error().message());
    }
    sample.image = std::move(*image);
    // The bytes are dead weight from here on; swapping really returns the memory (clear()
    // would keep the capacity) while the sample waits in queues.
    std::vector<std::uint8_t>().swap(sample.encoded);
    return {};
  }

 private:
  decode_options options_;
};

}  // namespace

expected<step_ptr> make_step(const decode_spec& spec) {
  return step_ptr(std::make_unique<decode_step>(spec));
}

}  // namespace conveyor

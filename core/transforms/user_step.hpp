#pragma once
/// The adapter that runs a step of the public step API (include/conveyor/step.hpp) as one of
/// the chain's transform_steps, so that it gets what built-in steps get: per-step randomness
/// from (epoch seed, sample id, step), hand-off between steps, timing, retries and quarantine.
/// Its declared fields are bound when the chain is built: a field it reads must exist with the
/// dtype and rank it asks for, and what it makes is typed for the steps after it. An image
/// (cv::Mat) is shown to it as a uint8 [height, width, channels] array; a uint8 rank-3 array it
/// makes into an image field stays an image (no copy: its storage is the image's).

#include <cstddef>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/step.hpp"
#include "core/transforms/field_bindings.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {

/// Immutable once built; apply() is safe to call concurrently (the public step's apply() is
/// const and must be).
class user_step final : public transform_step {
 public:
  using binding = field_binding;

  /// Binds the fields `made` declares into `fields` (errc::invalid_config naming the field and
  /// what does not match).
  static expected<step_ptr> make(std::string name, std::shared_ptr<const step> made,
                                 chain_fields& fields);

  std::string_view name() const noexcept override { return name_; }

  /// Runs the public step on a view of `sample`; its exceptions become errc::transform_error
  /// naming the sample, this step and what(). What it makes replaces the fields only when it
  /// returns and every made array has its declared type (so a failed attempt leaves the sample
  /// as it was).
  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override;

  /// Its declared cost_hint: cheap, or per_element of a field it reads (bound to its index).
  step_cost cost() const noexcept override { return cost_; }
  const std::vector<binding>& reads() const noexcept { return reads_; }
  const std::vector<binding>& makes() const noexcept { return makes_; }

 private:
  user_step(std::string name, std::shared_ptr<const step> made)
      : name_(std::move(name)), step_(std::move(made)) {}

  std::string name_;
  std::shared_ptr<const step> step_;
  std::vector<binding> reads_;
  std::vector<binding> makes_;
  step_cost cost_;
};

}  // namespace conveyor

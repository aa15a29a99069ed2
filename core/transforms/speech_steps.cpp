// The steps of MLPerf RNN-T's training input on the waveform, as its DALI pipeline does them
// (docs/rnnt-reference.md sections 6-8; core/audio/): speed_perturb, trim_silence, dither and
// preemphasis, each on a float32 [samples] audio field.

#include <algorithm>
#include <array>
#include <cmath>

#include "core/audio/nonsilent_region.hpp"
#include "core/audio/sinc_resampler.hpp"
#include "core/audio/soxr_resampler.hpp"
#include "core/codecs/audio_decoder.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// A step on one audio field.
class audio_step : public transform_step {
 public:
  explicit audio_step(std::size_t field) : field_(field) {}

 protected:
  host_array& audio(sample_state& sample) const { return sample.fields[field_].array; }
  void replace(sample_state& sample, host_array a) const {
    sample.fields[field_].set(std::move(a));
  }
  std::size_t field() const noexcept { return field_; }

 private:
  std::size_t field_;
};

class speed_perturb_step final : public audio_step {
 public:
  speed_perturb_step(std::size_t field, const speed_perturb_spec& spec)
      : audio_step(field), spec_(spec) {}
  std::string_view name() const noexcept override { return speed_perturb_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    const double u = draws_for(sample, own).uniform("speed", spec_.min, spec_.max);
    // The reference: a float32 factor times the rate, in float32 (pipeline.py line 185).
    const auto rate =
        static_cast<float>(static_cast<float>(u) * static_cast<float>(spec_.sample_rate));
    const auto& in = audio(sample);
    const auto n = static_cast<std::size_t>(in.extent(0));
    const auto n_out = resampled_length(n, spec_.sample_rate, rate);
    const auto limit = static_cast<std::size_t>(audio_options{}.max_samples);
    if (n_out > limit) {
      return sample_error(errc::transform_error, sample, name(),
                          std::to_string(n) + " samples would become " + std::to_string(n_out) +
                              ", more than " + std::to_string(limit));
    }
    if (spec_.method == resample_method::sinc) {
      auto out = host_array::uninitialized(dtype::float32, {static_cast<std::int64_t>(n_out)});
      sinc_resample(in.data<float>(), n, spec_.sample_rate, rate, out.data<float>());
      replace(sample, std::move(out));
      return {};
    }
    auto made = soxr_resample(in.data<float>(), n, 1, spec_.sample_rate, rate);
    if (!made) {
      return sample_error(errc::transform_error, sample, name(), made.error().message());
    }
    auto out = host_array::uninitialized(dtype::float32, {static_cast<std::int64_t>(made->size())});
    std::copy(made->begin(), made->end(), out.data<float>());
    replace(sample, std::move(out));
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::per_element, field()}; }

 private:
  speed_perturb_spec spec_;
};

class trim_silence_step final : public audio_step {
 public:
  trim_silence_step(std::size_t field, const trim_silence_spec& spec) : audio_step(field) {
    options_.cutoff_db = spec.cutoff_db;
    options_.window = static_cast<std::size_t>(spec.window);
    options_.reset_interval = static_cast<std::size_t>(spec.reset_interval);
  }
  std::string_view name() const noexcept override { return trim_silence_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const auto& in = audio(sample);
    const auto n = static_cast<std::size_t>(in.extent(0));
    if (n == 0) {
      return sample_error(errc::transform_error, sample, name(), "the audio is empty (0 samples)");
    }
    const auto kept = nonsilent_region(in.data<float>(), n, options_);
    if (kept.begin == 0 && kept.length == n) {
      return {};
    }
    auto out = host_array::uninitialized(dtype::float32, {static_cast<std::int64_t>(kept.length)});
    std::copy_n(in.data<float>() + kept.begin, kept.length, out.data<float>());
    replace(sample, std::move(out));
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  nonsilence_options options_;
};

class dither_step final : public audio_step {
 public:
  dither_step(std::size_t field, const dither_spec& spec)
      : audio_step(field), scale_(static_cast<float>(spec.scale)) {}
  std::string_view name() const noexcept override { return dither_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    auto& draws = draws_for(sample, own);
    auto& a = audio(sample);
    float* x = a.data<float>();
    // The reference: audio + float32 normals * float32(1e-5), all in float32.
    constexpr std::size_t piece = 4096;
    std::array<double, piece> z{};
    for (std::size_t at = 0, n = a.element_count(); at < n; at += piece) {
      const auto count = std::min(piece, n - at);
      draws.standard_normals("dither", z.data(), count);
      for (std::size_t i = 0; i < count; ++i) {
        const float noise = static_cast<float>(z[i]) * scale_;
        x[at + i] = x[at + i] + noise;
      }
    }
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  float scale_;
};

class preemphasis_step final : public audio_step {
 public:
  preemphasis_step(std::size_t field, const preemphasis_spec& spec)
      : audio_step(field), coeff_(static_cast<float>(spec.coeff)) {}
  std::string_view name() const noexcept override { return preemphasis_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    auto& a = audio(sample);
    float* x = a.data<float>();
    const std::size_t n = a.element_count();
    if (n == 0) {
      return {};
    }
    // In place, last first, so that x[t - 1] is still the input. DALI scales the first sample.
    for (std::size_t t = n - 1; t > 0; --t) {
      x[t] = x[t] - coeff_ * x[t - 1];
    }
    x[0] = x[0] - coeff_ * x[0];
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  float coeff_;
};

// A step of `Spec` on its audio field (float32 [samples]).
template <class Step, class Spec>
expected<step_ptr> make_audio_step(const Spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto field = read_array(fields, Spec::op, spec.field, dtype::float32, 1);
  if (!field) {
    return std::move(field).error();
  }
  return step_ptr(std::make_unique<Step>(*field, spec));
}

expected<void> require_field(std::string_view op, const std::string& field) {
  return field.empty() ? invalid_spec(op, "field must name the audio field") : expected<void>();
}

}  // namespace

expected<void> check_params(const speed_perturb_spec& spec) {
  const auto op = speed_perturb_spec::op;
  if (!(spec.min > 0.0 && spec.min <= spec.max && spec.max <= 10.0)) {
    return invalid_spec(op, "needs 0 < min <= max <= 10 (got [" + format_number(spec.min) + ", " +
                                format_number(spec.max) + "])");
  }
  if (spec.method != resample_method::sinc && spec.method != resample_method::soxr) {
    return invalid_spec(op, "unknown method");
  }
  return first_failure(
      {require_field(op, spec.field), require_positive(op, "sample_rate", spec.sample_rate)});
}

expected<step_ptr> make_step(const speed_perturb_spec& spec, chain_fields& fields) {
  return make_audio_step<speed_perturb_step>(spec, fields);
}

expected<void> check_params(const trim_silence_spec& spec) {
  const auto op = trim_silence_spec::op;
  if (!(spec.cutoff_db < 0.0 && spec.cutoff_db >= -300.0)) {
    return invalid_spec(
        op, "cutoff_db must be in [-300, 0) (got " + format_number(spec.cutoff_db) + ")");
  }
  if (spec.reset_interval != 0 && spec.reset_interval < spec.window) {
    return invalid_spec(op, "reset_interval must be 0 (never) or >= window");
  }
  return first_failure(
      {require_field(op, spec.field), require_positive(op, "window", spec.window)});
}

expected<step_ptr> make_step(const trim_silence_spec& spec, chain_fields& fields) {
  return make_audio_step<trim_silence_step>(spec, fields);
}

expected<void> check_params(const dither_spec& spec) {
  if (!(spec.scale >= 0.0 && spec.scale <= 1.0)) {
    return invalid_spec(dither_spec::op,
                        "scale must be in [0, 1] (got " + format_number(spec.scale) + ")");
  }
  return require_field(dither_spec::op, spec.field);
}

expected<step_ptr> make_step(const dither_spec& spec, chain_fields& fields) {
  return make_audio_step<dither_step>(spec, fields);
}

expected<void> check_params(const preemphasis_spec& spec) {
  if (!(spec.coeff >= 0.0 && spec.coeff < 1.0)) {
    return invalid_spec(preemphasis_spec::op,
                        "coeff must be in [0, 1) (got " + format_number(spec.coeff) + ")");
  }
  return require_field(preemphasis_spec::op, spec.field);
}

expected<step_ptr> make_step(const preemphasis_spec& spec, chain_fields& fields) {
  return make_audio_step<preemphasis_step>(spec, fields);
}

}  // namespace conveyor

// The steps of MLPerf RNN-T's training input from the waveform to the features a model reads
// (docs/rnnt-reference.md sections 9-10): mel_spectrogram (with the log), normalize_features,
// spec_augment and frame_splice, on float32 [frames, bands] fields (time-major).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/audio/mel_spectrogram.hpp"
#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

/// A float32 [frames, bands] field of `bands` bands (varies: the frames).
field_type features_type(std::int64_t bands) {
  field_type t{field_kind::tensor, dtype::float32, 2, {}};
  t.shape[0] = varies;
  t.shape[1] = bands;
  return t;
}

class mel_spectrogram_step final : public transform_step {
 public:
  mel_spectrogram_step(std::size_t from, std::size_t to, mel_spectrogram mel)
      : from_(from), to_(to), mel_(std::move(mel)) {}
  std::string_view name() const noexcept override { return mel_spectrogram_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const auto& audio = sample.fields[from_].array;
    const auto n = static_cast<std::size_t>(audio.extent(0));
    if (n < 2) {
      return sample_error(
          errc::transform_error, sample, name(),
          "the audio has " + std::to_string(n) + " sample(s): a spectrogram needs at least 2");
    }
    auto out = host_array::uninitialized(dtype::float32, {static_cast<std::int64_t>(mel_.frames(n)),
                                                          static_cast<std::int64_t>(mel_.bands())});
    mel_.compute(audio.data<float>(), n, out.data<float>());
    if (from_ != to_) {
      sample.fields[from_] = field_value{};  // consumed: its memory goes now
    }
    sample.fields[to_].set(std::move(out));
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::per_element, from_}; }

 private:
  std::size_t from_;
  std::size_t to_;
  mel_spectrogram mel_;
};

/// A step on one float32 [frames, bands] field.
class features_step : public transform_step {
 public:
  explicit features_step(std::size_t field) : field_(field) {}
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 protected:
  host_array& features(sample_state& sample) const { return sample.fields[field_].array; }
  std::size_t field() const noexcept { return field_; }

 private:
  std::size_t field_;
};

class normalize_features_step final : public features_step {
 public:
  normalize_features_step(std::size_t field, const normalize_features_spec& /*spec*/)
      : features_step(field) {}
  std::string_view name() const noexcept override { return normalize_features_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    auto& a = features(sample);
    const auto frames = static_cast<std::size_t>(a.extent(0));
    const auto bands = static_cast<std::size_t>(a.extent(1));
    if (frames == 0) {
      return {};
    }
    float* x = a.data<float>();
    // As DALI's Normalize (and the transcription): the mean in double rounded to float32, the
    // variance about that mean in double (ddof 0), 1 / sqrt of it rounded to float32; a band
    // that does not vary becomes 0.
    std::vector<double> sum(bands, 0.0);
    for (std::size_t t = 0; t < frames; ++t) {
      for (std::size_t b = 0; b < bands; ++b) {
        sum[b] += x[t * bands + b];
      }
    }
    std::vector<float> mean(bands);
    for (std::size_t b = 0; b < bands; ++b) {
      mean[b] = static_cast<float>(sum[b] / static_cast<double>(frames));
      sum[b] = 0.0;
    }
    for (std::size_t t = 0; t < frames; ++t) {
      for (std::size_t b = 0; b < bands; ++b) {
        const double d = static_cast<double>(x[t * bands + b]) - mean[b];
        sum[b] += d * d;
      }
    }
    std::vector<float> scale(bands);
    for (std::size_t b = 0; b < bands; ++b) {
      const double var = sum[b] / static_cast<double>(frames);
      scale[b] = var > 0.0 ? static_cast<float>(1.0 / std::sqrt(var)) : 0.0F;
    }
    for (std::size_t t = 0; t < frames; ++t) {
      for (std::size_t b = 0; b < bands; ++b) {
        x[t * bands + b] = (x[t * bands + b] - mean[b]) * scale[b];
      }
    }
    return {};
  }
};

class spec_augment_step final : public features_step {
 public:
  spec_augment_step(std::size_t field, const spec_augment_spec& spec)
      : features_step(field), spec_(spec) {}
  std::string_view name() const noexcept override { return spec_augment_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    auto& draws = draws_for(sample, own);
    auto& a = features(sample);
    const std::int64_t frames = a.extent(0);
    const std::int64_t bands = a.extent(1);
    float* x = a.data<float>();
    // The draws in the reference's order: each mask's width, then its start.
    for (int k = 0; k < spec_.freq_masks; ++k) {
      const std::string site = "specaug.freq" + std::to_string(k);
      const auto w = draws.randint(site + ".w", spec_.min_freq, spec_.max_freq + 1);
      const auto f0 = draws.randint(site + ".f0", 0, std::max<std::int64_t>(1, bands - w + 1));
      for (std::int64_t t = 0; t < frames; ++t) {
        std::fill(x + t * bands + f0, x + t * bands + std::min(bands, f0 + w), 0.0F);
      }
    }
    const std::int64_t widest = max_time_frames(frames);
    for (int k = 0; k < spec_.time_masks; ++k) {
      const std::string site = "specaug.time" + std::to_string(k);
      const auto w = draws.randint(site + ".w", spec_.min_time,
                                   std::max<std::int64_t>(widest, spec_.min_time) + 1);
      const auto t0 = draws.randint(site + ".t0", 0, std::max<std::int64_t>(1, frames - w + 1));
      const auto t1 = std::min(frames, t0 + w);
      if (t0 < t1) {
        std::fill(x + t0 * bands, x + t1 * bands, 0.0F);
      }
    }
    return {};
  }

 private:
  /// The reference's int(round(T * max_time)) (round half to even) for a fraction, else the
  /// frames given.
  std::int64_t max_time_frames(std::int64_t frames) const {
    if (spec_.max_time > 0.0 && spec_.max_time < 1.0) {
      return static_cast<std::int64_t>(
          std::nearbyint(static_cast<double>(frames) * spec_.max_time));
    }
    return static_cast<std::int64_t>(spec_.max_time);
  }

  spec_augment_spec spec_;
};

class frame_splice_step final : public features_step {
 public:
  frame_splice_step(std::size_t field, const frame_splice_spec& spec)
      : features_step(field), stack_(spec.stack), subsample_(spec.subsample) {}
  std::string_view name() const noexcept override { return frame_splice_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    const auto& in = features(sample);
    const std::int64_t frames = in.extent(0);
    const std::int64_t bands = in.extent(1);
    const std::int64_t rows = (frames + subsample_ - 1) / subsample_;
    auto out = host_array::zeros(dtype::float32, {rows, bands * stack_});
    const float* x = in.data<float>();
    float* y = out.data<float>();
    const auto row_bytes = static_cast<std::size_t>(bands) * sizeof(float);
    for (std::int64_t j = 0; j < rows; ++j) {
      for (std::int64_t k = 0; k < stack_; ++k) {
        const std::int64_t t = j * subsample_ + k;
        if (t < frames) {
          std::memcpy(y + (j * stack_ + k) * bands, x + t * bands, row_bytes);
        }
      }
    }
    sample.fields[field()].set(std::move(out));
    return {};
  }

 private:
  std::int64_t stack_;
  std::int64_t subsample_;
};

/// The [frames, bands] float32 field `name` for step `op`.
expected<std::size_t> read_features(const chain_fields& fields, std::string_view op,
                                    const std::string& name) {
  return read_array(fields, op, name, dtype::float32, 2);
}

template <class Step, class Spec>
expected<step_ptr> make_features_step(const Spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto field = read_features(fields, Spec::op, spec.field);
  if (!field) {
    return std::move(field).error();
  }
  return step_ptr(std::make_unique<Step>(*field, spec));
}

spectrogram_options spectrogram_of(const mel_spectrogram_spec& spec) {
  spectrogram_options o;
  o.sample_rate = spec.sample_rate;
  o.n_fft = spec.n_fft;
  o.window = spec.window;
  o.hop = spec.hop;
  o.n_mels = spec.n_mels;
  o.f_min = spec.f_min;
  o.f_max = spec.f_max;
  o.log = spec.log;
  o.log_floor = spec.log_floor;
  return o;
}

}  // namespace

expected<void> check_params(const mel_spectrogram_spec& spec) {
  if (spec.from.empty() || spec.to.empty()) {
    return invalid_spec(mel_spectrogram_spec::op, "from and to must name fields");
  }
  if (spec.n_fft > (1 << 16) || spec.n_mels > 4096) {
    return invalid_spec(mel_spectrogram_spec::op, "n_fft must be <= 65536 and n_mels <= 4096");
  }
  if (auto made = mel_spectrogram::make(spectrogram_of(spec)); !made) {
    return invalid_spec(mel_spectrogram_spec::op, made.error().message());
  }
  return {};
}

expected<step_ptr> make_step(const mel_spectrogram_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto from = read_array(fields, mel_spectrogram_spec::op, spec.from, dtype::float32, 1);
  if (!from) {
    return std::move(from).error();
  }
  auto mel = mel_spectrogram::make(spectrogram_of(spec));
  if (spec.from != spec.to) {
    fields.drop(*from);
  }
  const auto to = fields.write(spec.to, features_type(spec.n_mels));
  return step_ptr(std::make_unique<mel_spectrogram_step>(*from, to, std::move(*mel)));
}

expected<void> check_params(const normalize_features_spec& spec) {
  return spec.field.empty() ? invalid_spec(normalize_features_spec::op, "field must name a field")
                            : expected<void>();
}

expected<step_ptr> make_step(const normalize_features_spec& spec, chain_fields& fields) {
  return make_features_step<normalize_features_step>(spec, fields);
}

expected<void> check_params(const spec_augment_spec& spec) {
  const auto op = spec_augment_spec::op;
  if (spec.field.empty()) {
    return invalid_spec(op, "field must name a field");
  }
  if (spec.freq_masks < 0 || spec.time_masks < 0 || spec.freq_masks > 1000 ||
      spec.time_masks > 1000) {
    return invalid_spec(op, "freq_masks and time_masks must be in [0, 1000]");
  }
  if (spec.min_freq < 0 || spec.min_freq > spec.max_freq || spec.min_time < 0) {
    return invalid_spec(op, "needs 0 <= min_freq <= max_freq and min_time >= 0");
  }
  if (!(spec.max_time >= 0.0 && spec.max_time <= 1e6)) {
    return invalid_spec(op, "max_time must be a fraction of the frames (< 1) or a count of frames");
  }
  return {};
}

expected<step_ptr> make_step(const spec_augment_spec& spec, chain_fields& fields) {
  return make_features_step<spec_augment_step>(spec, fields);
}

expected<void> check_params(const frame_splice_spec& spec) {
  const auto op = frame_splice_spec::op;
  if (spec.field.empty()) {
    return invalid_spec(op, "field must name a field");
  }
  if (spec.stack < 1 || spec.subsample < 1 || spec.stack > 64 || spec.subsample > 64) {
    return invalid_spec(op, "stack and subsample must be in [1, 64]");
  }
  return {};
}

expected<step_ptr> make_step(const frame_splice_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto field = read_features(fields, frame_splice_spec::op, spec.field);
  if (!field) {
    return std::move(field).error();
  }
  const auto bands = fields.type(*field).shape[1];
  if (bands == varies) {
    return error{errc::invalid_config,
                 "frame_splice: field '" + spec.field + "' has no fixed number of bands"};
  }
  fields.write(spec.field, features_type(bands * spec.stack));
  return step_ptr(std::make_unique<frame_splice_step>(*field, spec));
}

}  // namespace conveyor

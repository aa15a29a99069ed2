// The decode step for parts that are not images a crop works on: NPY arrays, audio, class ids,
// text and JSON values (core/codecs), each into an array field of the type the topology
// declares, checked per sample.

#include <algorithm>
#include <functional>

#include "core/audio/sinc_resampler.hpp"
#include "core/audio/soxr_resampler.hpp"
#include "core/codecs/audio_decoder.hpp"
#include "core/codecs/cls_decoder.hpp"
#include "core/codecs/json_decoder.hpp"
#include "core/codecs/npy_decoder.hpp"
#include "core/codecs/png_decoder.hpp"
#include "core/codecs/txt_decoder.hpp"
#include "core/transforms/array_decode_step.hpp"
#include "core/transforms/sample_parts.hpp"
#include "core/transforms/spec_checks.hpp"

namespace conveyor {
namespace {

using decoder = std::function<expected<host_array>(const part_ref& part)>;

/// `samples` (float32 [frames] or [frames, channels]) at `to` Hz. A file's rate comes from its
/// header: one that claims 1 Hz would make 16000 samples of every one it holds, so the result
/// is held to the decoder's own bound (audio_options::max_samples) before it is made.
expected<host_array> resampled(const host_array& samples, int from, int to) {
  const auto channels = samples.rank == 1 ? 1U : static_cast<unsigned>(samples.extent(1));
  const auto frames_out = resampled_length(static_cast<std::size_t>(samples.extent(0)), from, to);
  const auto limit = static_cast<std::size_t>(audio_options{}.max_samples);
  if (frames_out > limit / channels) {
    return error{errc::decode_error, std::to_string(samples.extent(0)) + " frames at " +
                                         std::to_string(from) + " Hz would resample to " +
                                         std::to_string(frames_out) + " at " + std::to_string(to) +
                                         " Hz, more than " + std::to_string(limit) + " samples"};
  }
  auto out = soxr_resample(samples.data<float>(), static_cast<std::size_t>(samples.extent(0)),
                           channels, from, to);
  if (!out) {
    return std::move(out).error();
  }
  const auto frames = static_cast<std::int64_t>(out->size() / channels);
  auto array = samples.rank == 1
                   ? host_array::uninitialized(dtype::float32, {frames})
                   : host_array::uninitialized(dtype::float32, {frames, samples.extent(1)});
  std::copy(out->begin(), out->end(), array.data<float>());
  return array;
}

/// An audio part as the spec wants it: mono or not, at its sample rate, within max_duration.
expected<host_array> decode_audio_part(const part_ref& p, const decode_spec& spec) {
  audio_options options;
  options.max_seconds = spec.max_duration;
  auto audio = decode_audio(p.data, p.size, options);
  if (!audio) {
    return std::move(audio).error();
  }
  auto samples = spec.mono ? mono_downmix(std::move(audio->samples)) : std::move(audio->samples);
  if (!samples || spec.sample_rate == 0 || audio->sample_rate == spec.sample_rate) {
    return samples;
  }
  if (!spec.resample) {
    return error{errc::decode_error, "a sample rate of " + std::to_string(audio->sample_rate) +
                                         " Hz, the recipe's is " +
                                         std::to_string(spec.sample_rate) + " (resample = false)"};
  }
  return resampled(*samples, audio->sample_rate, spec.sample_rate);
}

// The decoder of `kind`, with the spec's parameters bound.
decoder decoder_of(part_kind kind, const decode_spec& spec) {
  switch (kind) {
    case part_kind::npy:
      return [](const part_ref& p) { return decode_npy(p.data, p.size); };
    case part_kind::audio:
      return [spec](const part_ref& p) { return decode_audio_part(p, spec); };
    case part_kind::cls:
      return [](const part_ref& p) { return decode_cls(p.data, p.size); };
    case part_kind::txt:
      return [utf8 = spec.utf8](const part_ref& p) { return decode_txt(p.data, p.size, utf8); };
    case part_kind::json:
      return [key = spec.key, type = *spec.type, inner = spec.inner_shape](const part_ref& p) {
        return json_to_array(p.data, p.size, key, type, inner);
      };
    case part_kind::png:
      return [](const part_ref& p) { return decode_png(p.data, p.size, {}); };
    case part_kind::jpeg:
      break;
  }
  return [](const part_ref&) -> expected<host_array> {
    return error{errc::decode_error, "no array decoder for a JPEG (decode it as an image)"};
  };
}

class array_decode_step final : public transform_step {
 public:
  array_decode_step(const decode_spec& spec, part_kind kind, std::size_t to, field_type type)
      : from_(spec.from), to_(to), type_(type), decode_(decoder_of(kind, spec)) {}

  std::string_view name() const noexcept override { return decode_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    auto part = find_sample_part(sample, from_);
    if (!part) {
      return sample_error(part.error().code(), sample, name(), part.error().message());
    }
    auto array = decode_(*part);
    if (!array) {
      // A recipe's filter (max_duration) stays a filter; anything else is a decode error.
      const auto code =
          array.error().code() == errc::filtered ? errc::filtered : errc::decode_error;
      return sample_error(code, sample, name(),
                          "part '" + part->name + "': " + array.error().message());
    }
    if (!type_.admits(*array)) {
      return sample_error(errc::decode_error, sample, name(),
                          "part '" + part->name + "' decodes to " + describe(*array) +
                              ", the topology declares " + describe(type_));
    }
    sample.fields[to_].set(std::move(*array));
    return {};
  }

 private:
  std::string from_;
  std::size_t to_;
  field_type type_;
  decoder decode_;
};

// What a decode of `kind` makes, as the spec declares it; errc::invalid_config naming what
// the spec must say.
expected<field_type> declared_type(part_kind kind, const decode_spec& spec) {
  auto varying = [](dtype t, int rank, field_kind k = field_kind::tensor) {
    field_type out{k, t, rank, {}};
    for (int i = 0; i < rank; ++i) {
      out.shape[static_cast<std::size_t>(i)] = varies;
    }
    return out;
  };
  switch (kind) {
    case part_kind::audio:
      return varying(dtype::float32, spec.mono ? 1 : 2);
    case part_kind::cls:
      return varying(dtype::int32, 0);
    case part_kind::txt:
      return varying(dtype::uint8, 1, field_kind::bytes);
    case part_kind::npy:
    case part_kind::png:
      if (!spec.type || !spec.rank) {
        return error{errc::invalid_config,
                     "decode: a " + std::string(name_of(kind)) +
                         " part decodes to whatever its file holds: declare dtype and rank "
                         "(e.g. dtype = \"float32\", rank = 4)"};
      }
      if (kind == part_kind::npy && !spec.inner_shape.empty()) {
        if (static_cast<int>(spec.inner_shape.size()) != *spec.rank - 1) {
          return error{errc::invalid_config,
                       "decode: inner_shape gives the extents after the "
                       "first: rank - 1 of them"};
        }
        auto t = varying(*spec.type, *spec.rank);
        std::copy(spec.inner_shape.begin(), spec.inner_shape.end(), t.shape.begin() + 1);
        return t;
      }
      return varying(*spec.type, *spec.rank);
    case part_kind::json: {
      if (!spec.type || spec.key.empty()) {
        return error{errc::invalid_config,
                     "decode: a json part needs key (the value to take) and dtype"};
      }
      auto t = varying(*spec.type, 1 + static_cast<int>(spec.inner_shape.size()));
      std::copy(spec.inner_shape.begin(), spec.inner_shape.end(), t.shape.begin() + 1);
      if (spec.rank && *spec.rank != t.rank) {
        t = varying(*spec.type, *spec.rank);  // a scalar, or nesting without a hint
      }
      return t;
    }
    case part_kind::jpeg:
      break;
  }
  return error{errc::invalid_config, "decode: a JPEG decodes to an image"};
}

}  // namespace

expected<step_ptr> make_array_decode_step(const decode_spec& spec, part_kind kind,
                                          chain_fields& fields) {
  auto type = declared_type(kind, spec);
  if (!type) {
    return std::move(type).error();
  }
  auto to = fields.write(spec.to, *type);
  return step_ptr(std::make_unique<array_decode_step>(spec, kind, to, *type));
}

}  // namespace conveyor

#pragma once
/// What a transform step should do, as plain data: one struct of parameters per op, named as
/// in the `[[transform]] op = "..."` tables of the configuration, with the names of the fields
/// it reads and writes (README "Samples: named fields"; each op has defaults that make the
/// image recipe: fields "image" and "label"). make_step (transform_step.hpp) validates a spec
/// and builds the step.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "conveyor/step.hpp"

namespace conveyor {

/// How resize and random_resized_crop resample. Every name but opencv_bilinear resamples as
/// torchvision does to PIL images (core/transforms/antialiased_resize.hpp): PIL's filters
/// stretched by the downscale factor, so a large downscale is low-passed, not aliased (area is
/// PIL's BOX). opencv_bilinear is OpenCV's plain bilinear (2x2 pixels whatever the factor):
/// a little faster, and it aliases where the image shrinks more than 2x.
enum class interpolation : std::uint8_t { nearest, bilinear, bicubic, area, opencv_bilinear };

/// Where the decode step decodes JPEG images (decode_spec::on).
enum class decode_device : std::uint8_t { cpu, gpu, automatic };

/// "cpu", "gpu", "auto": the topology's names.
std::string_view to_string(decode_device where) noexcept;

/// The default image field.
inline constexpr std::string_view image_field_name = "image";

/// A record's part -> a field, by the part's extension (core/codecs/part_decoder.hpp): an
/// image (jpg, jpeg, png, ...) -> an RGB image; npy -> its array; wav, flac, ogg -> float32
/// samples; cls -> an int32 scalar; txt -> bytes; json -> the array at `key`.
struct decode_spec {
  static constexpr std::string_view op = "decode";
  /// The part it decodes: names separated by ';', the first present is taken
  /// (core/storage/record_parts.hpp); "": the record's image (its only part, or the first part
  /// named jpg, jpeg, png, ...).
  std::string from;
  std::string to{image_field_name};  ///< the field it makes
  /// What the decoded array must be (npy, json: required; audio: float32 [frames] once
  /// downmixed, [frames, channels] with mono false); a sample whose part decodes to
  /// something else is quarantined naming it.
  std::optional<dtype> type;
  std::optional<int> rank;
  std::string key;   ///< json: the key path ("boxes", "a.b") of the value to take
  bool mono = true;  ///< audio: mix the channels down to one
  /// audio: the rate the recipe needs (0: any). A file of another rate is resampled to it
  /// (libsoxr, very high quality; core/audio/soxr_resampler.hpp), or with resample false
  /// quarantined: never used at the wrong rate.
  int sample_rate = 0;
  bool resample = true;
  /// audio: a file longer than this many seconds (frames / its rate, from its header, before
  /// it is decoded) is filtered out by the recipe: counted as filtered, neither delivered nor
  /// quarantined (MLPerf RNN-T's max_duration). 0: no limit.
  double max_duration = 0.0;
  bool utf8 = true;  ///< txt: the bytes must be UTF-8
  /// json: the extents of the axes after the first (e.g. [4] for boxes), so that an empty
  /// array has the right shape ([0, 4]). npy: those extents, declared (each sample's are
  /// checked), for steps that need them fixed (frame_splice of [frames, 80] features).
  std::vector<std::int64_t> inner_shape;
  bool strict = true;  ///< a truncated or corrupt JPEG is an error, not a grey-filled image
  /// When a random_resized_crop or a resize follows directly: plan it from the JPEG header
  /// (the crop's box, or the resize's output size) and decode in the DCT domain at the
  /// smallest of 1/8, 1/4, 1/2 that still gives the box at least the output size (see
  /// make_decode_step). false: always decode in full.
  bool scaled = true;
  /// With scaled, for a random_resized_crop: decode only the rows and columns of the JPEG its
  /// box needs (the same pixels as the whole scaled decode; core/codecs/jpeg_region.hpp).
  bool roi = true;
  /// Which decoder takes a JPEG image: the preprocessor's CPU, or also the GPU's (nvJPEG,
  /// core/transforms/jpeg_offload.hpp), each image going where it is measured to finish
  /// sooner for images of its size (core/transforms/decode_share.hpp). gpu: nvJPEG must load and
  /// `gpu` must be a device, or start-up stops; auto: the CPU alone where either is missing.
  decode_device on = decode_device::cpu;
  int gpu = 0;        ///< the CUDA device that decodes, with on = gpu or auto
  int gpu_lanes = 8;  ///< how many JPEGs the GPU decodes at once (each holds device memory)
};

/// The area and aspect-ratio ranges torchvision's RandomResizedCrop draws from.
struct rrc_params {
  std::array<double, 2> scale{0.08, 1.0};             ///< fraction of the image area, [min, max]
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};  ///< width / height, [min, max]
};

/// The fields a geometric step moves (crop, resize, flip): the first is the image it works on;
/// the others follow it: a box field (float32 [n, 4] of x0, y0, x1, y1 in pixels) moves with
/// the image, a mask (a second image, e.g. a segmentation map) is cut, resized (nearest) and
/// flipped with it, from the same random draws.
using geometry_fields = std::vector<std::string>;

inline geometry_fields default_geometry_fields() {
  return {std::string(image_field_name)};
}

/// torchvision RandomResizedCrop: a random box, resized to height x width.
struct random_resized_crop_spec {
  static constexpr std::string_view op = "random_resized_crop";
  geometry_fields fields = default_geometry_fields();
  int height = 0;
  int width = 0;
  rrc_params params;
  interpolation interp = interpolation::bilinear;
};

/// torchvision Resize: with `size` > 0 the shorter side becomes `size` and the aspect ratio
/// stays, and with `max_size` > 0 the longer side is at most max_size (then the longer side
/// becomes max_size: Mask R-CNN's 800 / 1333); with `size` == 0 the image becomes exactly
/// height x width.
struct resize_spec {
  static constexpr std::string_view op = "resize";
  geometry_fields fields = default_geometry_fields();
  int size = 0;
  int max_size = 0;
  int height = 0;
  int width = 0;
  interpolation interp = interpolation::bilinear;
};

/// torchvision CenterCrop: the centred height x width box; a smaller image is zero-padded.
struct center_crop_spec {
  static constexpr std::string_view op = "center_crop";
  geometry_fields fields = default_geometry_fields();
  int height = 0;
  int width = 0;
};

/// Horizontal flip with probability p.
struct flip_spec {
  static constexpr std::string_view op = "flip";
  geometry_fields fields = default_geometry_fields();
  double p = 0.5;
};

/// Image -> float32 CHW tensor, (pixel / 255 - mean) / stddev per RGB channel.
struct normalize_spec {
  static constexpr std::string_view op = "normalize";
  std::string field{image_field_name};
  std::array<double, 3> mean{0.485, 0.456, 0.406};    ///< ImageNet's, on the 0..1 scale
  std::array<double, 3> stddev{0.229, 0.224, 0.225};  ///< ImageNet's, on the 0..1 scale
};

/// Image -> uint8 CHW tensor (planar RGB), for trainers that normalise on the GPU.
struct to_uint8_spec {
  static constexpr std::string_view op = "to_uint8";
  std::string field{image_field_name};
};

// The volume steps of the MLPerf UNet3D recipe (config/examples/unet3d-kits19.toml), as the
// reference's transforms do them (docs/unet3d-reference.md; pytorch_loader.py @ 6b277bbe).

/// RandBalancedCrop: reads the image (float32 [1, X, Y, Z]) and label (uint8 [1, X, Y, Z])
/// .npy parts in place (a part left in its file by dataset.map_parts, or in the record) and
/// makes `fields` (image, label) of the `size` window: with probability `oversampling` around
/// a foreground object (from the case's index, built on its first read), else uniform.
/// A case with a label value above `max_class` or an image with NaN or infinity is refused.
struct rand_balanced_crop_spec {
  static constexpr std::string_view op = "rand_balanced_crop";
  std::string image_part = "x.npy";
  std::string label_part = "y.npy";
  std::vector<std::string> fields{std::string(image_field_name), "label"};
  std::array<std::int64_t, 3> size{128, 128, 128};
  double oversampling = 0.4;
  int max_class = 2;
};

/// RandFlip: each of `axes` (of [C, X, Y, Z] arrays: 1, 2, 3) reversed when its draw is below
/// p (default 1 / the number of axes), on every one of `fields` alike.
struct rand_flip_spec {
  static constexpr std::string_view op = "rand_flip";
  std::vector<std::string> fields{std::string(image_field_name), "label"};
  std::vector<int> axes{1, 2, 3};
  std::optional<double> p;
};

/// Cast: field i becomes dtype types[i] (value conversion; a value the type cannot hold
/// refuses the sample).
struct cast_spec {
  static constexpr std::string_view op = "cast";
  std::vector<std::string> fields{std::string(image_field_name), "label"};
  std::vector<dtype> types{dtype::float32, dtype::uint8};
};

/// RandomBrightnessAugmentation: with probability p, the float32 field times (1 + f), f drawn
/// uniform in [1 - factor, 1 + factor), computed in double and rounded to float32 (the
/// reference's own convention: the factor applied is 1.7..2.3 for factor 0.3).
struct rand_brightness_spec {
  static constexpr std::string_view op = "rand_brightness";
  std::string field{image_field_name};
  double factor = 0.3;
  double p = 0.1;
};

/// GaussianNoise: with probability p, the float32 field plus float32(mean + s * z) per element,
/// s drawn uniform in [0, std) once per sample, z standard normal.
struct gaussian_noise_spec {
  static constexpr std::string_view op = "gaussian_noise";
  std::string field{image_field_name};
  double mean = 0.0;
  double std = 0.1;
  double p = 0.1;
};

// The speech steps of the MLPerf RNN-T recipe (config/examples/rnnt-librispeech.toml), as
// its DALI pipeline and SpecAugment do them (docs/rnnt-reference.md; core/audio/). Audio is
// a float32 [samples] field; features are float32 [frames, bands], time-major.

/// How speed_perturb resamples: `sinc`, DALI's windowed-sinc resampler, as the reference does
/// (no anti-aliasing: downsampling keeps the band above u * sample_rate / 2);
/// `soxr`, libsoxr's band-limited very-high-quality resampler.
enum class resample_method : std::uint8_t { sinc, soxr };

/// Speed perturbation: u drawn uniform in [min, max] per sample (site "speed"); the audio
/// resampled from sample_rate to float32(u * sample_rate) Hz and then taken as sample_rate, so
/// that u > 1 slows it down: ceil(n * u) samples.
struct speed_perturb_spec {
  static constexpr std::string_view op = "speed_perturb";
  std::string field = "audio";
  double min = 0.85;
  double max = 1.15;
  int sample_rate = 16000;
  resample_method method = resample_method::sinc;
};

/// Silence trimming (DALI's NonsilentRegion + Slice; core/audio/nonsilent_region.hpp): keeps
/// the audio from the first to the end of the last `window`-sample window whose mean square
/// is within cutoff_db of the loudest's.
struct trim_silence_spec {
  static constexpr std::string_view op = "trim_silence";
  std::string field = "audio";
  double cutoff_db = -60.0;
  int window = 2048;
  int reset_interval = 8192;  ///< the running mean square starts afresh this often (0: never)
};

/// Dither: every sample plus float32(scale * z), z standard normal (site "dither").
struct dither_spec {
  static constexpr std::string_view op = "dither";
  std::string field = "audio";
  double scale = 1e-5;
};

/// Pre-emphasis as DALI does it: y[t] = x[t] - coeff * x[t - 1], and y[0] = x[0] - coeff *
/// x[0] (the first sample scaled, not kept).
struct preemphasis_spec {
  static constexpr std::string_view op = "preemphasis";
  std::string field = "audio";
  double coeff = 0.97;
};

/// Audio -> mel spectrogram float32 [frames, n_mels] (core/audio/mel_spectrogram.hpp):
/// frames of `window` samples every `hop`, centred and reflected at the ends, DALI's Hann
/// window, an n_fft-point power spectrum through Slaney mel filters from f_min to f_max
/// (0: sample_rate / 2); with `log`, ln(max(x, log_floor)). The audio field is consumed.
struct mel_spectrogram_spec {
  static constexpr std::string_view op = "mel_spectrogram";
  std::string from = "audio";
  std::string to = "features";
  int sample_rate = 16000;
  int n_fft = 512;
  int window = 320;
  int hop = 160;
  int n_mels = 80;
  double f_min = 0.0;
  double f_max = 0.0;
  bool log = true;
  double log_floor = 1e-20;
};

/// Per-feature normalisation over time (DALI's Normalize(axes=[time])): each band (column)
/// of a float32 [frames, bands] field minus its mean, times 1 / its standard deviation (ddof
/// 0, no epsilon); a band of zero variance becomes 0.
struct normalize_features_spec {
  static constexpr std::string_view op = "normalize_features";
  std::string field = "features";
};

/// SpecAugment (MLPerf RNN-T's features.py, noise 0): freq_masks bands of width w in
/// [min_freq, max_freq] from f0 in [0, bands - w], then time_masks runs of frames of width in
/// [min_time, M] from t0 in [0, frames - w], M = round(max_time * frames) (half to even) when
/// max_time < 1, else max_time frames; masked cells become 0. Draws (sites
/// "specaug.freq<k>.w", ".f0", "specaug.time<k>.w", ".t0") in the reference's order.
/// The reference draws t0 over the padded batch's frames (a mask may fall in the padding);
/// here, before batching, over the utterance's own (given the same draws, the same cells).
struct spec_augment_spec {
  static constexpr std::string_view op = "spec_augment";
  std::string field = "features";
  int freq_masks = 2;
  int min_freq = 0;
  int max_freq = 20;
  int time_masks = 10;
  int min_time = 0;
  double max_time = 0.03;
};

/// Frame splicing (stacking and subsampling): [frames, bands] -> [ceil(frames / subsample),
/// stack * bands], row j holding frames j * subsample .. j * subsample + stack - 1 side by
/// side (0 past the end).
struct frame_splice_spec {
  static constexpr std::string_view op = "frame_splice";
  std::string field = "features";
  int stack = 3;
  int subsample = 3;
};

/// A transcript (a byte string field) -> int32 token ids [tokens] by a vocabulary file (one
/// token per line, its id the line's number from 0; core/transforms/vocabulary.hpp), longest
/// match first; with lowercase, ASCII letters are lowercased first (the reference lowercases
/// LibriSpeech's transcripts). A character no token covers refuses the sample, naming it.
struct tokenize_spec {
  static constexpr std::string_view op = "tokenize";
  std::string from = "transcript";
  std::string to = "tokens";
  std::string vocabulary;
  bool lowercase = true;
};

/// A step of the public step API (include/conveyor/step.hpp, core/transforms/user_step.hpp):
/// the step its registered factory `name` made from the parameters of its table (the topology
/// loader calls the factory once; copies share the step, which is immutable).
struct user_step_spec {
  static constexpr std::string_view op = "";  ///< no built-in op: named by `name`
  std::string name;
  std::shared_ptr<const step> made;
};

class chain_fields;
class transform_step;

/// A step a part of Conveyor builds itself, never named in a topology (the step that runs a
/// Python Dataset's dataset[i] in a worker process: core/python/python_step.hpp): `make`
/// declares the fields it reads and writes in the chain being built and makes the step.
struct built_step_spec {
  static constexpr std::string_view op = "";  ///< no op of a topology: named by `name`
  std::string name;
  std::function<expected<std::unique_ptr<const transform_step>>(chain_fields&)> make;
};

struct field_binding;

/// A Python function as a step (`op = "python"`): `function` ("package.module:callable") is
/// called as callable(fields, rng) in the pipeline's Python worker processes
/// (core/python/python_transform.hpp), never in the runtime's threads; `fields` a dict of the
/// fields it reads as NumPy arrays (an image as uint8 [h, w, c]), `rng` a numpy.random.Generator
/// seeded from (epoch seed, sample, step); it returns a dict of the fields it makes. A field it
/// makes has dtypes[i] and ranks[i] when given (then its extents vary), else the dtype, rank
/// and shape of the field of that name it reads (it must read one).
struct python_transform_spec {
  static constexpr std::string_view op = "python";
  std::string function;
  std::vector<std::string> reads{std::string(image_field_name)};
  std::vector<std::string> makes{std::string(image_field_name)};
  std::vector<dtype> dtypes;  ///< empty, or one per made field
  std::vector<int> ranks;     ///< empty, or one per made field
  std::string where;          ///< how errors name the step: "transform[2] (python pkg.mod:f)"
  /// Makes the step once its fields are bound: set by the pipeline that runs the topology, which
  /// owns the workers (core/python/python_transform.hpp); null in a topology only loaded (its
  /// chain is built to check its fields, never run).
  std::function<expected<std::unique_ptr<const transform_step>>(
      const std::vector<field_binding>& reads, const std::vector<field_binding>& makes)>
      bind;
};

using transform_spec =
    std::variant<decode_spec, random_resized_crop_spec, resize_spec, center_crop_spec, flip_spec,
                 normalize_spec, to_uint8_spec, rand_balanced_crop_spec, rand_flip_spec, cast_spec,
                 rand_brightness_spec, gaussian_noise_spec, speed_perturb_spec, trim_silence_spec,
                 dither_spec, preemphasis_spec, mel_spectrogram_spec, normalize_features_spec,
                 spec_augment_spec, frame_splice_spec, tokenize_spec, python_transform_spec,
                 user_step_spec, built_step_spec>;

/// The op name of a spec, e.g. "center_crop" (a user step's registered name).
std::string_view op_name(const transform_spec& spec);

/// The spec of op `op` with every parameter at its default (sizes 0, to be set).
/// errc::invalid_argument naming the known ops when there is no such op.
expected<transform_spec> default_spec(std::string_view op);

/// decode, random_resized_crop 224, flip 0.5, normalize with ImageNet's mean and stddev.
std::vector<transform_spec> imagenet_train_recipe();

}  // namespace conveyor

#include "config/transform_schema.hpp"

#include <optional>
#include <string>
#include <variant>

#include "config/user_step_reader.hpp"
#include "core/transforms/step_registry.hpp"
#include "core/transforms/transform_chain.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor::config_detail {
namespace {

/// normalize's `on`.
enum class placement : std::uint8_t { cpu, gpu };

std::string_view to_string(placement where) noexcept {
  return where == placement::gpu ? "gpu" : "cpu";
}

struct size_value {
  int height = 0;
  int width = 0;
  bool scalar = false;  ///< given as one integer
};

/// The required `size`: one integer or [height, width], each >= 1.
std::optional<size_value> read_size(table_reader& table) {
  constexpr std::string_view key = "size";
  const auto* value = table.required(key);
  if (value == nullptr) {
    return std::nullopt;
  }
  std::string path = table.path_of(key);
  if (value->is_integer()) {
    auto side = read_int<int>(table.errors(), *value, path, at_least(1));
    if (!side) {
      return std::nullopt;
    }
    return size_value{*side, *side, true};
  }
  const auto* array = value->as_array();
  if (array == nullptr || array->size() != 2) {
    std::string got =
        array ? "an array of " + std::to_string(array->size()) : std::string(type_name(*value));
    table.fail(*value, key, "expected an integer or [height, width], got " + got);
    return std::nullopt;
  }
  auto height = read_int<int>(table.errors(), (*array)[0], path + "[0]", at_least(1));
  auto width = read_int<int>(table.errors(), (*array)[1], path + "[1]", at_least(1));
  if (!height || !width) {
    return std::nullopt;
  }
  return size_value{*height, *width, false};
}

interpolation read_interpolation(table_reader& table, interpolation fallback) {
  return table.choice("interpolation", fallback,
                      {interpolation::nearest, interpolation::bilinear, interpolation::bicubic,
                       interpolation::area, interpolation::opencv_bilinear});
}

// The parameters of each op, read into a spec that holds the defaults.

// The element types a field may be declared as.
std::optional<dtype> read_dtype(table_reader& table, std::string_view key) {
  const auto* value = table.find(key);
  if (value == nullptr) {
    return std::nullopt;
  }
  auto text = table.string(key, "");
  if (auto type = dtype_named(text)) {
    return type;
  }
  std::string names;
  for (auto t : all_dtypes) {
    names += (names.empty() ? "\"" : ", \"") + std::string(name_of(t)) + "\"";
  }
  table.fail(*value, key, "must be one of " + names + " (got \"" + text + "\")");
  return std::nullopt;
}

void read_params(table_reader& table, decode_spec& spec, transform_list& /*list*/) {
  spec.from = table.string("from", spec.from);
  spec.to = table.string("to", spec.to);
  spec.type = read_dtype(table, "dtype");
  if (table.find("rank") != nullptr) {
    spec.rank = table.integer<int>("rank", 0, closed(0, 4));
  }
  spec.key = table.string("key", spec.key);
  spec.mono = table.boolean("mono", spec.mono);
  spec.sample_rate = table.integer<int>("sample_rate", spec.sample_rate, closed(0, 1000000));
  spec.resample = table.boolean("resample", spec.resample);
  spec.max_duration = table.number("max_duration", spec.max_duration, closed(0.0, 1e9));
  spec.utf8 = table.boolean("utf8", spec.utf8);
  spec.inner_shape = table.integers("inner_shape", spec.inner_shape, at_least(0), 3);
  spec.strict = table.boolean("strict", spec.strict);
  spec.scaled = table.boolean("scaled", spec.scaled);
  spec.roi = table.boolean("roi", spec.roi);
  spec.on = table.choice("on", spec.on,
                         {decode_device::cpu, decode_device::gpu, decode_device::automatic});
  spec.gpu = table.integer<int>("gpu", spec.gpu, closed(0, 63));
  spec.gpu_lanes = table.integer<int>("gpu_lanes", spec.gpu_lanes, closed(1, 64));
}

void read_fields(table_reader& table, geometry_fields& fields) {
  fields = table.strings("fields", fields, host_array::max_rank * 4);
}

void read_params(table_reader& table, random_resized_crop_spec& spec, transform_list& /*list*/) {
  read_fields(table, spec.fields);
  if (auto size = read_size(table)) {
    spec.height = size->height;
    spec.width = size->width;
  }
  spec.params.scale = table.numbers("scale", spec.params.scale);
  spec.params.ratio = table.numbers("ratio", spec.params.ratio);
  spec.interp = read_interpolation(table, spec.interp);
}

void read_params(table_reader& table, resize_spec& spec, transform_list& /*list*/) {
  read_fields(table, spec.fields);
  spec.max_size = table.integer<int>("max_size", spec.max_size, at_least(1));
  if (auto size = read_size(table)) {
    spec.size = size->scalar ? size->height : 0;
    spec.height = size->scalar ? 0 : size->height;
    spec.width = size->scalar ? 0 : size->width;
  }
  spec.interp = read_interpolation(table, spec.interp);
}

void read_params(table_reader& table, center_crop_spec& spec, transform_list& /*list*/) {
  read_fields(table, spec.fields);
  if (auto size = read_size(table)) {
    spec.height = size->height;
    spec.width = size->width;
  }
}

void read_params(table_reader& table, flip_spec& spec, transform_list& /*list*/) {
  read_fields(table, spec.fields);
  spec.p = table.number("p", spec.p, closed(0.0, 1.0));
}

void read_params(table_reader& table, normalize_spec& spec, transform_list& list) {
  spec.field = table.string("field", spec.field);
  spec.mean = table.numbers("mean", spec.mean);
  spec.stddev = table.numbers("std", spec.stddev);
  list.normalize_on_gpu =
      table.choice("on", placement::cpu, {placement::cpu, placement::gpu}) == placement::gpu;
  list.normalize_dtype =
      table.choice("dtype", list.normalize_dtype, {output_dtype::float32, output_dtype::bfloat16});
  if (list.normalize_dtype == output_dtype::bfloat16 && !list.normalize_on_gpu) {
    table.fail(*table.find("dtype"), "dtype",
               "\"bfloat16\" needs on = \"gpu\" (normalize on the CPU writes float32)");
  }
}

void read_params(table_reader& table, to_uint8_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
}

// The volume steps.

// `size`: one integer (a cube) or [x, y, z], each >= 1.
void read_volume_size(table_reader& table, std::array<std::int64_t, 3>& size) {
  const auto* value = table.find("size");
  if (value == nullptr) {
    return;
  }
  if (value->is_integer()) {
    auto side = table.integer<std::int64_t>("size", size[0], at_least(1));
    size = {side, side, side};
    return;
  }
  auto sides = table.integers("size", {size.begin(), size.end()}, at_least(1), 3);
  if (sides.size() != 3) {
    table.fail(*value, "size", "expected an integer or [x, y, z]");
    return;
  }
  std::copy(sides.begin(), sides.end(), size.begin());
}

void read_params(table_reader& table, rand_balanced_crop_spec& spec, transform_list& /*list*/) {
  spec.image_part = table.string("image", spec.image_part);
  spec.label_part = table.string("label", spec.label_part);
  spec.fields = table.strings("fields", spec.fields, 2);
  read_volume_size(table, spec.size);
  spec.oversampling = table.number("oversampling", spec.oversampling, closed(0.0, 1.0));
  spec.max_class = table.integer<int>("max_class", spec.max_class, closed(1, 255));
}

void read_params(table_reader& table, rand_flip_spec& spec, transform_list& /*list*/) {
  spec.fields = table.strings("fields", spec.fields, 16);
  auto axes = table.integers("axes", {spec.axes.begin(), spec.axes.end()},
                             closed(0, host_array::max_rank - 1), host_array::max_rank);
  spec.axes.assign(axes.begin(), axes.end());
  if (table.find("p") != nullptr) {
    spec.p = table.number("p", 0.0, closed(0.0, 1.0));
  }
}

void read_params(table_reader& table, cast_spec& spec, transform_list& /*list*/) {
  spec.fields = table.strings("fields", spec.fields, 16);
  std::vector<std::string> names;
  for (auto t : spec.types) {
    names.emplace_back(name_of(t));
  }
  spec.types.clear();
  for (const auto& name : table.strings("dtypes", names, 16)) {
    if (auto type = dtype_named(name)) {
      spec.types.push_back(*type);
    } else {
      table.fail(*table.find("dtypes"), "dtypes", "\"" + name + "\" is not a dtype");
    }
  }
}

void read_params(table_reader& table, rand_brightness_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.factor = table.number("factor", spec.factor, closed(0.0, 1.0));
  spec.p = table.number("p", spec.p, closed(0.0, 1.0));
}

void read_params(table_reader& table, gaussian_noise_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.mean = table.number("mean", spec.mean, closed(-1e6, 1e6));
  spec.std = table.number("std", spec.std, closed(0.0, 1e6));
  spec.p = table.number("p", spec.p, closed(0.0, 1.0));
}

// The speech steps.

void read_params(table_reader& table, speed_perturb_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.min = table.number("min", spec.min, closed(0.01, 10.0));
  spec.max = table.number("max", spec.max, closed(0.01, 10.0));
  spec.sample_rate = table.integer<int>("sample_rate", spec.sample_rate, closed(1, 1000000));
  spec.method = table.choice("method", spec.method, {resample_method::sinc, resample_method::soxr});
}

void read_params(table_reader& table, trim_silence_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.cutoff_db = table.number("cutoff_db", spec.cutoff_db, closed(-300.0, -0.001));
  spec.window = table.integer<int>("window", spec.window, closed(1, 1 << 24));
  spec.reset_interval =
      table.integer<int>("reset_interval", spec.reset_interval, closed(0, 1 << 30));
}

void read_params(table_reader& table, dither_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.scale = table.number("scale", spec.scale, closed(0.0, 1.0));
}

void read_params(table_reader& table, preemphasis_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.coeff = table.number("coeff", spec.coeff, closed(0.0, 0.999999));
}

void read_params(table_reader& table, mel_spectrogram_spec& spec, transform_list& /*list*/) {
  spec.from = table.string("from", spec.from);
  spec.to = table.string("to", spec.to);
  spec.sample_rate = table.integer<int>("sample_rate", spec.sample_rate, closed(1, 1000000));
  spec.n_fft = table.integer<int>("n_fft", spec.n_fft, closed(2, 1 << 16));
  spec.window = table.integer<int>("window", spec.window, closed(1, 1 << 16));
  spec.hop = table.integer<int>("hop", spec.hop, closed(1, 1 << 16));
  spec.n_mels = table.integer<int>("n_mels", spec.n_mels, closed(1, 4096));
  spec.f_min = table.number("f_min", spec.f_min, closed(0.0, 1e6));
  spec.f_max = table.number("f_max", spec.f_max, closed(0.0, 1e6));
  spec.log = table.boolean("log", spec.log);
  spec.log_floor = table.number("log_floor", spec.log_floor, closed(1e-37, 1e37));
}

void read_params(table_reader& table, normalize_features_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
}

void read_params(table_reader& table, spec_augment_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.freq_masks = table.integer<int>("freq_masks", spec.freq_masks, closed(0, 1000));
  spec.min_freq = table.integer<int>("min_freq", spec.min_freq, closed(0, 4096));
  spec.max_freq = table.integer<int>("max_freq", spec.max_freq, closed(0, 4096));
  spec.time_masks = table.integer<int>("time_masks", spec.time_masks, closed(0, 1000));
  spec.min_time = table.integer<int>("min_time", spec.min_time, closed(0, 1 << 20));
  spec.max_time = table.number("max_time", spec.max_time, closed(0.0, 1e6));
}

void read_params(table_reader& table, frame_splice_spec& spec, transform_list& /*list*/) {
  spec.field = table.string("field", spec.field);
  spec.stack = table.integer<int>("stack", spec.stack, closed(1, 64));
  spec.subsample = table.integer<int>("subsample", spec.subsample, closed(1, 64));
}

void read_params(table_reader& table, tokenize_spec& spec, transform_list& /*list*/) {
  spec.from = table.string("from", spec.from);
  spec.to = table.string("to", spec.to);
  spec.vocabulary = table.string("vocabulary", spec.vocabulary);
  spec.lowercase = table.boolean("lowercase", spec.lowercase);
}

void read_params(table_reader& table, python_transform_spec& spec, transform_list& /*list*/) {
  if (table.required("function") != nullptr) {
    spec.function = table.string("function", spec.function);
  }
  spec.reads = table.strings("reads", spec.reads, 64);
  spec.makes = table.strings("makes", spec.makes, 64);
  for (const auto& name : table.strings("dtypes", {}, 64)) {
    if (auto type = dtype_named(name)) {
      spec.dtypes.push_back(*type);
    } else {
      table.fail(*table.find("dtypes"), "dtypes", "\"" + name + "\" is not a dtype");
    }
  }
  auto ranks = table.integers("ranks", {}, closed(0, host_array::max_rank), 64);
  spec.ranks.assign(ranks.begin(), ranks.end());
  spec.where = table.path() + " (python " + spec.function + ")";
}

// default_spec never gives a user step: read_user_step reads those.
void read_params(table_reader& /*table*/, user_step_spec& /*spec*/, transform_list& /*list*/) {}
void read_params(table_reader& /*table*/, built_step_spec& /*spec*/, transform_list& /*list*/) {}

/// One [[transform]] table; nullopt after a report.
std::optional<transform_spec> read_spec(table_reader& table, transform_list& list) {
  std::size_t errors_before = table.errors().error_count();
  const auto* op = table.required("op");
  auto name = op ? read_string(table.errors(), *op, table.path_of("op")) : std::nullopt;
  if (!name) {
    return std::nullopt;
  }
  auto spec = default_spec(*name);
  if (!spec) {
    if (auto factory = find_registered_step(*name)) {
      auto user = read_user_step(table, *name, *factory);
      return user ? std::optional<transform_spec>(std::move(*user)) : std::nullopt;
    }
    // Its other keys belong to an op we do not know: reporting them would only mislead.
    table.fail(*op, "op", spec.error().message() + registered_steps_hint());
    return std::nullopt;
  }
  std::visit([&](auto& params) { read_params(table, params, list); }, *spec);
  table.reject_unknown_keys();
  if (table.errors().error_count() != errors_before) {
    return std::nullopt;
  }
  if (auto ok = check_params(*spec); !ok) {
    table.fail_here(ok.error().message());
    return std::nullopt;
  }
  return *spec;
}

}  // namespace

transform_list read_transforms(table_reader& root) {
  constexpr std::string_view key = "transform";
  transform_list list;
  const auto* value = root.required(key);
  if (value == nullptr) {
    return list;
  }
  const auto* array = value->as_array();
  if (array == nullptr) {
    root.fail(*value, key,
              "expected an array of tables ([[transform]]), got " + std::string(type_name(*value)));
    return list;
  }
  if (array->empty()) {
    root.fail(*value, key, "must list at least decode and normalize (or to_uint8)");
    return list;
  }
  std::size_t errors_before = root.errors().error_count();
  std::vector<const toml::table*> tables;
  for (std::size_t i = 0; i < array->size(); ++i) {
    std::string path = root.path_of(key) + "[" + std::to_string(i) + "]";
    const auto* table = (*array)[i].as_table();
    if (table == nullptr) {
      root.errors().fail(&(*array)[i].source(), path,
                         "expected a table, got " + std::string(type_name((*array)[i])));
      continue;
    }
    table_reader reader(root.errors(), table, path);
    if (auto spec = read_spec(reader, list)) {
      list.specs.push_back(*spec);
      tables.push_back(table);
    }
  }
  if (root.errors().error_count() == errors_before) {
    std::size_t failed = 0;
    if (auto chain = transform_chain::build(list.specs, &failed); !chain) {
      // Reported at the step that does not add up: the fields it names come before it.
      root.errors().fail(&tables[failed]->source(),
                         root.path_of(key) + "[" + std::to_string(failed) + "]",
                         chain.error().message());
    } else {
      list.schema = chain->schema();
    }
  }
  return list;
}

}  // namespace conveyor::config_detail

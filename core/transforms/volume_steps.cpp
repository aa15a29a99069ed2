// The per-array steps of the MLPerf UNet3D recipe after its crop: rand_flip, cast,
// rand_brightness and gaussian_noise, as the reference's RandFlip, Cast,
// RandomBrightnessAugmentation and GaussianNoise (pytorch_loader.py @ 6b277bbe, lines 81-134;
// docs/unet3d-reference.md sections 4-7), on array fields of any shape.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/transforms/spec_checks.hpp"
#include "core/transforms/transform_step.hpp"

namespace conveyor {
namespace {

constexpr std::array<std::string_view, host_array::max_rank> flip_sites{"flip0", "flip1", "flip2",
                                                                        "flip3"};

/// The `n` elements of `item` bytes at `from`, last first, to `to`.
void reverse_elements(const std::uint8_t* from, std::uint8_t* to, std::size_t n, std::size_t item) {
  auto reverse = [&](auto element) {
    using T = decltype(element);
    std::vector<T> row(n);  // elements copied out: no aliasing, no unaligned loads
    std::memcpy(row.data(), from, n * sizeof(T));
    std::reverse(row.begin(), row.end());
    std::memcpy(to, row.data(), n * sizeof(T));
  };
  switch (item) {
    case 1:
      return reverse(std::uint8_t{});
    case 2:
      return reverse(std::uint16_t{});
    case 4:
      return reverse(std::uint32_t{});
    default:
      return reverse(std::uint64_t{});
  }
}

/// `in` with the axes marked in `flip` reversed (a copy, as np.flip(...).copy()).
host_array flipped(const host_array& in, const std::array<bool, host_array::max_rank>& flip) {
  auto out = host_array::uninitialized(in.type, in.shape.begin(), in.shape.begin() + in.rank);
  const int rank = in.rank;
  const auto item = size_of(in.type);
  const auto row = static_cast<std::size_t>(in.extent(rank - 1));
  const auto rows = in.element_count() / std::max<std::size_t>(row, 1);
  const bool reverse_row = flip[static_cast<std::size_t>(rank - 1)];
  for (std::size_t r = 0; r < rows; ++r) {
    // The source row: r's index on each outer axis, mirrored where flipped.
    std::size_t source = 0;
    std::size_t rest = r;
    std::size_t stride = 1;
    for (int a = rank - 2; a >= 0; --a) {
      const auto n = static_cast<std::size_t>(in.extent(a));
      auto i = rest % n;
      rest /= n;
      source += (flip[static_cast<std::size_t>(a)] ? n - 1 - i : i) * stride;
      stride *= n;
    }
    const auto* from = in.bytes.data() + source * row * item;
    auto* to = out.bytes.data() + r * row * item;
    if (reverse_row) {
      reverse_elements(from, to, row, item);
    } else {
      std::memcpy(to, from, row * item);
    }
  }
  return out;
}

class rand_flip_step final : public transform_step {
 public:
  rand_flip_step(std::vector<std::size_t> fields, std::vector<int> axes, double p)
      : fields_(std::move(fields)), axes_(std::move(axes)), p_(p) {}
  std::string_view name() const noexcept override { return rand_flip_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    auto& draws = draws_for(sample, own);
    std::array<bool, host_array::max_rank> flip{};
    bool any = false;
    for (std::size_t i = 0; i < axes_.size(); ++i) {
      flip[static_cast<std::size_t>(axes_[i])] = draws.random(flip_sites[i]) < p_;
      any = any || flip[static_cast<std::size_t>(axes_[i])];
    }
    for (auto f : fields_) {
      auto& a = sample.fields[f].array;
      if (a.rank <= axes_.back()) {
        return sample_error(
            errc::transform_error, sample, name(),
            "field " + std::to_string(f) + " is " + describe(a) + ", without the axes it flips");
      }
      if (any) {
        sample.fields[f].set(flipped(a, flip));
      }
    }
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  std::vector<std::size_t> fields_;
  std::vector<int> axes_;  ///< ascending
  double p_;
};

// Casts: every element of `in` as `To`, or the index of the first it cannot hold.
template <class To, class From>
std::optional<std::size_t> convert(const From* in, To* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const From v = in[i];
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
      if (!(v > static_cast<From>(std::numeric_limits<To>::min()) - 1 &&
            v < static_cast<From>(std::numeric_limits<To>::max()) + 1)) {
        return i;
      }
    } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To>) {
      if (v < std::numeric_limits<To>::min() || v > std::numeric_limits<To>::max()) {
        return i;
      }
    }
    out[i] = static_cast<To>(v);
  }
  return std::nullopt;
}

template <class F>
bool with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::uint8:
      f(std::uint8_t{});
      return true;
    case dtype::int16:
      f(std::int16_t{});
      return true;
    case dtype::int32:
      f(std::int32_t{});
      return true;
    case dtype::int64:
      f(std::int64_t{});
      return true;
    case dtype::float32:
      f(float{});
      return true;
    default:
      return false;
  }
}

bool castable(dtype t) {
  return with_type(t, [](auto) {});
}

class cast_step final : public transform_step {
 public:
  cast_step(std::vector<std::size_t> fields, std::vector<dtype> types)
      : fields_(std::move(fields)), types_(std::move(types)) {}
  std::string_view name() const noexcept override { return cast_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& /*rng*/) const override {
    std::vector<host_array> made(fields_.size());
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const auto& in = sample.fields[fields_[i]].array;
      if (in.type == types_[i]) {
        continue;
      }
      made[i] = host_array::uninitialized(types_[i], in.shape.begin(), in.shape.begin() + in.rank);
      std::optional<std::size_t> bad;
      with_type(in.type, [&](auto from) {
        with_type(types_[i], [&](auto to) {
          using From = decltype(from);
          using To = decltype(to);
          bad = convert(in.data<From>(), made[i].data<To>(), in.element_count());
        });
      });
      if (bad) {
        return sample_error(errc::transform_error, sample, name(),
                            "element " + std::to_string(*bad) + " of a " + describe(in) +
                                " field does not fit " + std::string(name_of(types_[i])));
      }
    }
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      if (made[i].rank > 0 || !made[i].bytes.empty()) {
        sample.fields[fields_[i]].set(std::move(made[i]));
      }
    }
    return {};
  }
  step_cost cost() const noexcept override { return {step_cost::kind::cheap, 0}; }

 private:
  std::vector<std::size_t> fields_;
  std::vector<dtype> types_;
};

class rand_brightness_step final : public transform_step {
 public:
  rand_brightness_step(std::size_t field, const rand_brightness_spec& spec)
      : field_(field), spec_(spec) {}
  std::string_view name() const noexcept override { return rand_brightness_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    auto& draws = draws_for(sample, own);
    if (!(draws.random("brightness.apply") < spec_.p)) {
      return {};
    }
    const double f = draws.uniform("brightness.factor", 1.0 - spec_.factor, 1.0 + spec_.factor);
    // The reference multiplies a float32 image by a float64 array of shape (1,): NumPy
    // computes in double, then .astype(float32) rounds (docs/unet3d-reference.md section 6).
    const double scale = 1.0 + f;
    auto& a = sample.fields[field_].array;
    float* x = a.data<float>();
    for (std::size_t i = 0, n = a.element_count(); i < n; ++i) {
      x[i] = static_cast<float>(static_cast<double>(x[i]) * scale);
    }
    return {};
  }

 private:
  std::size_t field_;
  rand_brightness_spec spec_;
};

class gaussian_noise_step final : public transform_step {
 public:
  gaussian_noise_step(std::size_t field, const gaussian_noise_spec& spec)
      : field_(field), spec_(spec) {}
  std::string_view name() const noexcept override { return gaussian_noise_spec::op; }

  expected<void> apply(sample_state& sample, std::mt19937_64& rng) const override {
    rng_draws own(rng);
    auto& draws = draws_for(sample, own);
    if (!(draws.random("noise.apply") < spec_.p)) {
      return {};
    }
    const double s = draws.uniform("noise.std", 0.0, spec_.std);
    auto& a = sample.fields[field_].array;
    float* x = a.data<float>();
    // noise = float32(mean + s * z) per element, then a float32 addition (section 7).
    constexpr std::size_t piece = 4096;
    std::array<double, piece> z{};
    for (std::size_t at = 0, n = a.element_count(); at < n; at += piece) {
      const auto count = std::min(piece, n - at);
      draws.standard_normals("noise.z", z.data(), count);
      for (std::size_t i = 0; i < count; ++i) {
        x[at + i] = x[at + i] + static_cast<float>(spec_.mean + s * z[i]);
      }
    }
    return {};
  }

 private:
  std::size_t field_;
  gaussian_noise_spec spec_;
};

template <class Spec>
expected<std::vector<std::size_t>> bind_all(const Spec& spec, chain_fields& fields) {
  std::vector<std::size_t> out;
  for (const auto& name : spec.fields) {
    auto index = read_array(fields, Spec::op, name);
    if (!index) {
      return std::move(index).error();
    }
    out.push_back(*index);
  }
  return out;
}

// A step of `Spec` on its float32 field.
template <class Step, class Spec>
expected<step_ptr> make_float_step(const Spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto field = read_array(fields, Spec::op, spec.field, dtype::float32);
  if (!field) {
    return std::move(field).error();
  }
  return step_ptr(std::make_unique<Step>(*field, spec));
}

}  // namespace

expected<void> check_params(const rand_flip_spec& spec) {
  const auto op = rand_flip_spec::op;
  if (spec.fields.empty() || spec.axes.empty()) {
    return invalid_spec(op, "fields and axes must not be empty");
  }
  for (std::size_t i = 0; i < spec.axes.size(); ++i) {
    if (spec.axes[i] < 0 || spec.axes[i] >= host_array::max_rank ||
        (i > 0 && spec.axes[i] <= spec.axes[i - 1])) {
      return invalid_spec(op, "axes must be ascending, distinct, in 0.." +
                                  std::to_string(host_array::max_rank - 1));
    }
  }
  return spec.p ? require_probability(op, "p", *spec.p) : expected<void>();
}

expected<step_ptr> make_step(const rand_flip_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_all(spec, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  for (std::size_t i = 0; i < bound->size(); ++i) {
    if (fields.type((*bound)[i]).rank <= spec.axes.back()) {
      return error{errc::invalid_config, "rand_flip: field '" + spec.fields[i] + "' is " +
                                             describe(fields.type((*bound)[i])) +
                                             ", without axis " + std::to_string(spec.axes.back())};
    }
  }
  // The reference's 1 / len(axes): 1/3 for three axes.
  const double p = spec.p.value_or(1.0 / static_cast<double>(spec.axes.size()));
  return step_ptr(std::make_unique<rand_flip_step>(std::move(*bound), spec.axes, p));
}

expected<void> check_params(const cast_spec& spec) {
  if (spec.fields.empty() || spec.fields.size() != spec.types.size()) {
    return invalid_spec(cast_spec::op, "fields and dtypes must name as many (got " +
                                           std::to_string(spec.fields.size()) + " and " +
                                           std::to_string(spec.types.size()) + ")");
  }
  for (auto t : spec.types) {
    if (!castable(t)) {
      return invalid_spec(cast_spec::op, "casts to uint8, int16, int32, int64 or float32 (not " +
                                             std::string(name_of(t)) + ")");
    }
  }
  return {};
}

expected<step_ptr> make_step(const cast_spec& spec, chain_fields& fields) {
  if (auto ok = check_params(spec); !ok) {
    return std::move(ok).error();
  }
  auto bound = bind_all(spec, fields);
  if (!bound) {
    return std::move(bound).error();
  }
  for (std::size_t i = 0; i < bound->size(); ++i) {
    auto type = fields.type((*bound)[i]);
    if (!castable(type.type)) {
      return error{errc::invalid_config, "cast: field '" + spec.fields[i] + "' is " +
                                             describe(type) + ", which cast does not read"};
    }
    type.type = spec.types[i];
    fields.write(spec.fields[i], type);
  }
  return step_ptr(std::make_unique<cast_step>(std::move(*bound), spec.types));
}

expected<void> check_params(const rand_brightness_spec& spec) {
  const auto op = rand_brightness_spec::op;
  if (!(spec.factor >= 0.0 && spec.factor <= 1.0)) {
    return invalid_spec(op, "factor must be in [0, 1] (got " + format_number(spec.factor) + ")");
  }
  return require_probability(op, "p", spec.p);
}

expected<step_ptr> make_step(const rand_brightness_spec& spec, chain_fields& fields) {
  return make_float_step<rand_brightness_step>(spec, fields);
}

expected<void> check_params(const gaussian_noise_spec& spec) {
  const auto op = gaussian_noise_spec::op;
  if (!std::isfinite(spec.mean) || !(spec.std >= 0.0 && spec.std < 1e6)) {
    return invalid_spec(op, "mean must be finite and std in [0, 1e6) (got " +
                                format_number(spec.mean) + ", " + format_number(spec.std) + ")");
  }
  return require_probability(op, "p", spec.p);
}

expected<step_ptr> make_step(const gaussian_noise_spec& spec, chain_fields& fields) {
  return make_float_step<gaussian_noise_step>(spec, fields);
}

}  // namespace conveyor

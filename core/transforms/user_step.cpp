#include "core/transforms/user_step.hpp"

#include <optional>
#include <utility>

#include <opencv2/core.hpp>

namespace conveyor {
namespace {

using binding = user_step::binding;

array_shape shape_of(const cv::Mat& image) {
  return {3, {image.rows, image.cols, image.channels(), 0}};
}

array_shape shape_of(const host_array& a) {
  array_shape out;
  out.rank = a.rank;
  for (int i = 0; i < a.rank; ++i) {
    out.extents[static_cast<std::size_t>(i)] = a.extent(i);
  }
  return out;
}

/// "uint8 [2, 3]" for a step's array.
std::string describe(dtype type, const array_shape& shape) {
  std::string out(name_of(type));
  out += " [";
  for (int i = 0; i < shape.rank; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  }
  return out + "]";
}

/// What one apply() made for one field, not yet in the sample.
struct made_value {
  const binding* to = nullptr;
  cv::Mat image;
  host_array array;
  dtype type = dtype::uint8;
  array_shape shape;
};

/// The sample as a public step sees it during one apply().
class sample_view_impl final : public sample_view {
 public:
  sample_view_impl(const user_step& s, sample_state& sample) : step_(s), sample_(sample) {}

  std::uint64_t id() const override { return sample_.sample_id; }
  std::string_view key() const override { return sample_.key; }

  array_view read(std::string_view name) const override {
    const auto* b = find_binding(step_.reads(), name);
    if (b == nullptr) {
      throw step_error("read field '" + std::string(name) +
                       "', which the step does not declare among the fields it reads");
    }
    const auto& f = sample_.fields[b->index];
    if (!f.present) {
      throw step_error("field '" + b->name + "' is missing from the sample");
    }
    if (!f.is_image()) {
      return {f.array.type, shape_of(f.array), f.array.bytes.data()};
    }
    const cv::Mat* image = &f.image;
    if (!image->isContinuous()) {
      // A crop's view into a larger image: the step sees a dense copy.
      scratch_.push_back(image->clone());
      image = &scratch_.back();
    }
    return {dtype::uint8, shape_of(*image), image->ptr<std::uint8_t>()};
  }

  mutable_array_view make(std::string_view name, dtype type,
                          const std::vector<std::int64_t>& extents) override {
    const auto* b = find_binding(step_.makes(), name);
    if (b == nullptr) {
      throw step_error("made field '" + std::string(name) +
                       "', which the step does not declare among the fields it makes");
    }
    if (type != b->type.type || static_cast<int>(extents.size()) != b->type.rank) {
      throw step_error("made field '" + b->name + "' as " + std::string(name_of(type)) +
                       " of rank " + std::to_string(extents.size()) + ", declared " +
                       conveyor::describe(b->type));
    }
    made_value v;
    v.to = b;
    v.type = type;
    v.shape.rank = static_cast<int>(extents.size());
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (extents[i] < 0) {
        throw step_error("made field '" + b->name + "' with a negative extent");
      }
      v.shape.extents[i] = extents[i];
    }
    std::uint8_t* bytes = nullptr;
    if (b->image) {
      v.image.create(static_cast<int>(extents[0]), static_cast<int>(extents[1]),
                     CV_8UC(static_cast<int>(extents[2])));
      bytes = v.image.ptr<std::uint8_t>();
    } else {
      v.array = host_array::uninitialized(type, extents.begin(), extents.end());
      bytes = v.array.bytes.data();
    }
    made_.push_back(std::move(v));
    return {type, made_.back().shape, bytes};
  }

  /// Puts what was made into the sample (the last make of a field wins), after checking all
  /// of it against the declared types.
  expected<void> commit() {
    for (const auto& v : made_) {
      if (!fits(v.to->type, v.type, v.shape)) {
        return sample_error(errc::transform_error, sample_, step_.name(),
                            "made field '" + v.to->name + "' " + describe(v.type, v.shape) +
                                ", declared " + conveyor::describe(v.to->type));
      }
    }
    for (auto& v : made_) {
      auto& f = sample_.fields[v.to->index];
      if (v.to->image) {
        f.set(std::move(v.image));
      } else {
        f.set(std::move(v.array));
      }
    }
    return {};
  }

 private:
  const user_step& step_;
  sample_state& sample_;
  std::vector<made_value> made_;  // views point into the buffers, which moves keep
  mutable std::vector<cv::Mat> scratch_;
};

}  // namespace

expected<step_ptr> user_step::make(std::string name, std::shared_ptr<const step> made,
                                   chain_fields& fields) {
  if (!made) {
    return error(errc::invalid_config, "step '" + name + "' was not made by its factory");
  }
  std::unique_ptr<user_step> out(new user_step(std::move(name), std::move(made)));
  step_declaration declared;
  try {
    declared = out->step_->declare();
  } catch (const std::exception& e) {
    return error(errc::invalid_config, std::string("declare() threw: ") + e.what());
  }
  auto reads = bind_reads(declared.reads, fields);
  if (!reads) {
    return std::move(reads).error();
  }
  out->reads_ = std::move(*reads);
  auto makes = bind_makes(declared.makes, out->reads_, fields);
  if (!makes) {
    return std::move(makes).error();
  }
  out->makes_ = std::move(*makes);
  if (declared.cost.how == cost_hint::kind::cheap) {
    out->cost_.how = step_cost::kind::cheap;
  } else {
    const auto* field = find_binding(out->reads_, declared.cost.field);
    if (field == nullptr) {
      return error(errc::invalid_config, "its cost hint names field '" + declared.cost.field +
                                             "', which it does not read");
    }
    out->cost_ = {step_cost::kind::per_element, field->index};
  }
  return step_ptr(std::move(out));
}

expected<void> user_step::apply(sample_state& sample, std::mt19937_64& rng) const {
  sample_view_impl view(*this, sample);
  try {
    step_->apply(view, rng);
  } catch (const std::exception& e) {
    return sample_error(errc::transform_error, sample, name_, e.what());
  } catch (...) {
    return sample_error(errc::transform_error, sample, name_,
                        "threw something that is not a std::exception");
  }
  return view.commit();
}

expected<step_ptr> make_step(const user_step_spec& spec, chain_fields& fields) {
  return user_step::make(spec.name, spec.made, fields);
}

expected<void> check_params(const user_step_spec& spec) {
  if (!spec.made) {
    return error(errc::invalid_argument, "step '" + spec.name + "' was not made by its factory");
  }
  return {};
}

}  // namespace conveyor

#include "core/python/python_step.hpp"

#include <cstring>
#include <optional>
#include <utility>

#include "core/base/little_endian.hpp"
#include "core/python/worker_step.hpp"
#include "core/transforms/chain_fields.hpp"

namespace conveyor {

namespace {

// The dtype a batch carries a worker's `t` as: conveyor's of the same name; none for the unsigned
// types torch cannot hold (as default_collate refuses them).
std::optional<dtype> batch_dtype(worker_dtype t) {
  return dtype_named(name_of(t));
}

bool is_text(leaf_kind k) {
  return k == leaf_kind::str || k == leaf_kind::bytes || k == leaf_kind::pickled;
}

// The type a batch carries leaf `f` as: its dtype and shape; a byte string's extent varies.
expected<field_type> type_of_leaf(const worker_field& f) {
  auto t = batch_dtype(f.dtype);
  if (!t) {
    return error{errc::invalid_argument, "element " + f.name + " is " + name_of(f.dtype) +
                                             ", which no batch carries (torch has no such "
                                             "tensor): convert it in __getitem__"};
  }
  if (f.shape.size() > static_cast<std::size_t>(host_array::max_rank)) {
    return error{errc::invalid_argument, "element " + f.name + " has " +
                                             std::to_string(f.shape.size()) +
                                             " dimensions; a sample's arrays have at most " +
                                             std::to_string(host_array::max_rank)};
  }
  field_type type;
  type.kind = is_text(f.kind) ? field_kind::bytes : field_kind::tensor;
  type.type = *t;
  type.rank = static_cast<int>(f.shape.size());
  for (std::size_t i = 0; i < f.shape.size(); ++i) {
    type.shape[i] = is_text(f.kind) ? varies : static_cast<std::int64_t>(f.shape[i]);
  }
  return type;
}

class python_step final : public worker_step {
 public:
  python_step(std::shared_ptr<worker_pool> pool, python_sample_layout layout,
              std::vector<std::size_t> targets, std::chrono::milliseconds hang_timeout)
      : worker_step(std::move(pool), hang_timeout),
        layout_(std::move(layout)),
        targets_(std::move(targets)) {}

  std::string_view name() const noexcept override { return "python"; }

 private:
  // The dataset index is what its reader read (python_dataset.hpp): the sample's position in
  // an order the trainer's sampler gave, or the index itself.
  expected<void> ask(worker_process& worker, const sample_state& sample,
                     std::uint64_t seed) const override {
    if (sample.multipart || sample.encoded.size() != 8) {
      return error{errc::transform_error, sample.key + ": its record holds " +
                                              std::to_string(sample.encoded.size()) +
                                              " bytes, not a Python dataset's index"};
    }
    return worker.ask(sample.epoch_seed, little_endian::load<std::uint64_t>(sample.encoded.data()),
                      seed);
  }

  expected<void> check_leaf(const sample_state& sample, const worker_field& got,
                            std::size_t i) const {
    const auto& want = layout_.fields[i];
    auto type = type_of_leaf(got);
    if (want.type.kind == field_kind::bytes && got.kind == layout_.leaf_kinds[i] &&
        got.shape.size() == 1 &&
        got.shape[0] > static_cast<std::uint64_t>(want.collate.max_values)) {
      return error{errc::transform_error,
                   sample.key + ": element " + got.name + " takes " + std::to_string(got.shape[0]) +
                       " bytes, past the " + std::to_string(want.collate.max_values) +
                       " a sample's may (python.max_text_bytes; conveyor.DataLoader's "
                       "max_object_bytes)"};
    }
    if (got.name != want.name || got.kind != layout_.leaf_kinds[i] || !type ||
        (want.type.kind == field_kind::tensor && *type != want.type)) {
      return error{errc::transform_error,
                   sample.key + ": element " + got.name + " is " + name_of(got.dtype) + " " +
                       shape_text(got.shape) + ", where the first sample's " + want.name + " is " +
                       describe(want.type) + ": it cannot go into a batch with it"};
    }
    return {};
  }

  expected<void> write_fields(sample_state& sample, const worker_sample& got) const override {
    if (got.fields.size() != layout_.fields.size() || got.structure != layout_.structure) {
      return error{errc::transform_error,
                   sample.key + ": its structure " + got.structure.substr(0, 200) +
                       " is not the first sample's " + layout_.structure.substr(0, 200)};
    }
    for (std::size_t i = 0; i < got.fields.size(); ++i) {
      const auto& f = got.fields[i];
      if (auto ok = check_leaf(sample, f, i); !ok) {
        return ok;
      }
      auto a = host_array::uninitialized(*batch_dtype(f.dtype), f.shape.begin(), f.shape.end());
      if (auto read = got.copy(f, a.bytes.data()); !read) {
        return error{errc::io_error,
                     sample.key + ": element " + f.name + ": " + read.error().message()};
      }
      sample.fields[targets_[i]].set(std::move(a));
    }
    return {};
  }

  python_sample_layout layout_;
  std::vector<std::size_t> targets_;  ///< per leaf: its field's index in the chain
};

}  // namespace

expected<python_sample_layout> probe_python_dataset(worker_pool& pool, std::uint64_t index,
                                                    std::uint64_t seed,
                                                    std::chrono::milliseconds timeout) {
  auto lease = pool.take();
  if (!lease) {
    return lease.error();
  }
  if (auto asked = (*lease)->ask(0, index, seed); !asked) {
    return asked.error();
  }
  auto got = (*lease)->await(timeout);
  if (!got) {
    return got.error();
  }
  python_sample_layout layout;
  layout.structure = got->structure;
  for (const auto& f : got->fields) {
    auto type = type_of_leaf(f);
    if (!type) {
      return error{type.error().code(),
                   "dataset[" + std::to_string(index) + "]: " + type.error().message()};
    }
    field_spec spec;
    spec.name = f.name;
    spec.type = *type;
    layout.fields.push_back(std::move(spec));
    layout.leaf_kinds.push_back(f.kind);
    layout.first_bytes.push_back(f.bytes);
  }
  return layout;
}

std::uint64_t python_text_room(std::uint64_t max_text_bytes, std::uint64_t first_bytes) {
  constexpr std::uint64_t floor = std::uint64_t{1} << 20;
  constexpr std::uint64_t ceiling = std::uint64_t{1} << 30;
  if (max_text_bytes > 0) {
    return std::min(max_text_bytes, ceiling);
  }
  return first_bytes >= ceiling / 4 ? ceiling : std::max(floor, 4 * first_bytes);
}

built_step_spec python_step_spec(std::shared_ptr<worker_pool> pool, python_sample_layout layout,
                                 std::chrono::milliseconds hang_timeout) {
  built_step_spec spec;
  spec.name = "python";
  spec.make = [pool = std::move(pool), layout = std::move(layout),
               hang_timeout](chain_fields& fields) -> expected<step_ptr> {
    fields.drop(label_field);
    std::vector<std::size_t> targets;
    for (const auto& f : layout.fields) {
      targets.push_back(fields.write(f.name, f.type));
    }
    return step_ptr(std::make_unique<python_step>(pool, layout, std::move(targets), hang_timeout));
  };
  return spec;
}

}  // namespace conveyor

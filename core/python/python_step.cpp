#include "core/python/python_step.hpp"

#include <cstring>
#include <optional>
#include <utility>

#include "core/transforms/chain_fields.hpp"
#include "core/transforms/external_step.hpp"

namespace conveyor {

namespace {

using clock_type = std::chrono::steady_clock;

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

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

// The work of one sample in flight: the worker leased for it, and when it must have answered.
class python_pending final : public pending_work {
 public:
  python_pending(worker_lease leased, clock_type::time_point until)
      : lease(std::move(leased)), deadline(until) {}
  // Abandoned before its answer (the sample failed elsewhere, its actor died): the worker is
  // still at it and is no use to the next sample.
  ~python_pending() override {
    if (!answered) {
      lease->kill();
    }
  }
  python_pending(const python_pending&) = delete;
  python_pending& operator=(const python_pending&) = delete;

  worker_lease lease;
  clock_type::time_point deadline;
  bool answered = false;
};

class python_step final : public external_step {
 public:
  python_step(std::shared_ptr<worker_pool> pool, python_sample_layout layout,
              std::vector<std::size_t> targets, std::chrono::milliseconds hang_timeout)
      : pool_(std::move(pool)),
        layout_(std::move(layout)),
        targets_(std::move(targets)),
        hang_timeout_(hang_timeout) {}

  std::string_view name() const noexcept override { return "python"; }

  std::vector<external_process_figures> processes() const override { return pool_->figures(); }

  expected<void> begin(sample_state& sample, std::mt19937_64& rng) const override {
    auto lease = pool_->take();
    if (!lease) {
      return failure(sample, lease.error());
    }
    if (auto asked = (*lease)->ask(sample.epoch_seed, sample.sample_id, rng()); !asked) {
      return failure(sample, asked.error());
    }
    lease->asked();
    sample.pending =
        std::make_unique<python_pending>(std::move(*lease), clock_type::now() + hang_timeout_);
    return {};
  }

  expected<bool> wait(sample_state& sample, std::chrono::nanoseconds timeout) const override {
    auto& p = static_cast<python_pending&>(*sample.pending);
    const auto left = p.deadline - clock_type::now();
    auto got = p.lease->await(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::min<clock_type::duration>(
            std::max<clock_type::duration>(left, clock_type::duration::zero()), timeout)));
    if (!got && got.error().code() == errc::timed_out) {
      if (clock_type::now() < p.deadline) {
        return false;
      }
      sample.pending.reset();  // kills the worker
      return failure(sample, error{errc::timed_out, "no answer within hang_timeout (" +
                                                        std::to_string(hang_timeout_.count()) +
                                                        " ms): its worker was killed"});
    }
    p.answered = true;
    if (got || got.error().code() == errc::transform_error) {
      p.lease.answered();
    }
    if (!got) {
      sample.pending.reset();  // a live worker goes back to the pool, a dead one frees its place
      return failure(sample, got.error());
    }
    auto written = write_fields(sample, *got);
    sample.pending.reset();
    if (!written) {
      return written.error();
    }
    return true;
  }

 private:
  // `e`, naming the sample unless it does.
  static error failure(const sample_state& sample, const error& e) {
    if (e.message().rfind(sample.key, 0) == 0) {
      return e;
    }
    return error{e.code(), sample.key + ": " + e.message()};
  }

  expected<void> check_leaf(const sample_state& sample, const worker_field& got,
                            std::size_t i) const {
    const auto& want = layout_.fields[i];
    auto type = type_of_leaf(got);
    if (got.name != want.name || got.kind != layout_.leaf_kinds[i] || !type ||
        (want.type.kind == field_kind::tensor && *type != want.type)) {
      return error{errc::transform_error,
                   sample.key + ": element " + got.name + " is " + name_of(got.dtype) + " " +
                       shape_text(got.shape) + ", where the first sample's " + want.name + " is " +
                       describe(want.type) + ": it cannot go into a batch with it"};
    }
    return {};
  }

  expected<void> write_fields(sample_state& sample, const worker_sample& got) const {
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

  std::shared_ptr<worker_pool> pool_;
  python_sample_layout layout_;
  std::vector<std::size_t> targets_;  ///< per leaf: its field's index in the chain
  std::chrono::milliseconds hang_timeout_;
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
  }
  return layout;
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

#include "core/transforms/transform_chain.hpp"

#include <chrono>
#include <random>
#include <string>

#include "core/transforms/chain_fields.hpp"
#include "core/transforms/external_step.hpp"

namespace conveyor {
namespace {

/// "transform 2 (flip)".
std::string step_title(const std::vector<transform_spec>& specs, std::size_t i) {
  return "transform " + std::to_string(i) + " (" + std::string(op_name(specs[i])) + ")";
}

}  // namespace

expected<transform_chain> transform_chain::build(const std::vector<transform_spec>& specs,
                                                 std::size_t* failed_step) {
  auto fail = [&](std::size_t i, const error& e) {
    if (failed_step != nullptr) {
      *failed_step = i;
    }
    return error(e.code(), step_title(specs, i) + ": " + e.message());
  };
  if (specs.empty()) {
    return error(errc::invalid_config,
                 "the transform chain is empty (it needs at least a decode "
                 "and a to_uint8 or normalize)");
  }
  auto s = std::make_shared<shared>();
  chain_fields fields;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    fields.begin_step(step_title(specs, i));
    auto step = make_step(specs[i], fields, i + 1 < specs.size() ? &specs[i + 1] : nullptr);
    if (!step) {
      return fail(i, step.error());
    }
    if (std::holds_alternative<decode_spec>(specs[i]) ||
        std::holds_alternative<rand_balanced_crop_spec>(specs[i])) {
      s->last_part_reader = i;
    }
    s->steps.push_back(std::move(*step));
  }
  auto schema = fields.schema();
  if (!schema) {
    return fail(specs.size() - 1, schema.error());
  }
  s->schema = std::move(*schema);
  s->schema_positions = fields.schema_positions();
  s->field_count = fields.size();
  return transform_chain(std::move(s));
}

void transform_chain::start(sample_state& sample, std::int32_t label) const {
  sample.fields.assign(shared_->field_count, field_value{});
  auto l = host_array::uninitialized(dtype::int32, {});
  *l.data<std::int32_t>() = label;
  sample.fields[label_field].set(std::move(l));
  sample.next_step = 0;
}

expected<void> transform_chain::run_next(sample_state& sample) const {
  if (done(sample)) {
    return error(errc::invalid_argument, sample_location(sample) +
                                             ": no step left to run (next_step " +
                                             std::to_string(sample.next_step) + " of a " +
                                             std::to_string(size()) + "-step chain)");
  }
  std::mt19937_64 rng = step_rng(sample, sample.next_step);
  // An external step begun elsewhere counts from its begin.
  auto start = sample.pending ? sample.pending_since : std::chrono::steady_clock::now();
  auto result = step(sample.next_step).apply(sample, rng);
  if (!result) {
    return result;
  }
  finish_step(sample, start);
  return {};
}

bool transform_chain::next_is_external(const sample_state& sample) const noexcept {
  return next_cost(sample).how == step_cost::kind::external;  // only external_step says so
}

expected<bool> transform_chain::advance_external(sample_state& sample,
                                                 std::chrono::nanoseconds timeout) const {
  const auto& s = static_cast<const external_step&>(step(sample.next_step));
  if (!sample.pending) {
    std::mt19937_64 rng = step_rng(sample, sample.next_step);
    sample.pending_since = std::chrono::steady_clock::now();
    if (auto begun = s.begin(sample, rng); !begun) {
      return begun.error();
    }
  }
  const auto start = sample.pending_since;
  auto ended = s.wait(sample, timeout);
  if (ended && *ended) {
    finish_step(sample, start);
  }
  return ended;
}

std::vector<external_process_figures> transform_chain::external_processes() const {
  std::vector<external_process_figures> out;
  for (const auto& s : shared_->steps) {
    if (s->cost().how == step_cost::kind::external) {
      auto more = static_cast<const external_step&>(*s).processes();
      out.insert(out.end(), more.begin(), more.end());
    }
  }
  return out;
}

void transform_chain::finish_step(sample_state& sample,
                                  std::chrono::steady_clock::time_point start) const {
  auto elapsed = std::chrono::steady_clock::now() - start;
  sample.step_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  if (sample.next_step == shared_->last_part_reader) {
    // The bytes are dead weight from here on; swapping really returns the memory (clear()
    // would keep the capacity) while the sample waits in queues.
    std::vector<std::uint8_t>().swap(sample.encoded);
  }
  ++sample.next_step;
}

expected<void> transform_chain::run_all(sample_state& sample) const {
  while (!done(sample)) {
    if (auto ok = run_next(sample); !ok) {
      return ok;
    }
  }
  return {};
}

expected<std::vector<host_array>> transform_chain::take_fields(sample_state& sample) const {
  const auto& schema = shared_->schema;
  std::vector<host_array> out(schema.fields.size());
  for (std::size_t i = 0; i < sample.fields.size(); ++i) {
    const int at = shared_->schema_positions[i];
    if (at < 0) {
      continue;
    }
    auto& f = sample.fields[i];
    const auto& spec = schema.fields[static_cast<std::size_t>(at)];
    if (!f.present || f.is_image() || !spec.type.admits(f.array)) {
      return error{errc::transform_error, sample_location(sample) + ": field '" + spec.name +
                                              "' came out " +
                                              (!f.present     ? std::string("missing")
                                               : f.is_image() ? std::string("an image")
                                                              : describe(f.array)) +
                                              ", the chain makes it " + describe(spec.type)};
    }
    out[static_cast<std::size_t>(at)] = std::move(f.array);
  }
  return out;
}

}  // namespace conveyor

#include "actors/sample_work.hpp"

#include <exception>

#include "core/codecs/jpeg_decoder.hpp"

namespace conveyor {

namespace {

error thrown(const sample_state& s, const std::exception& e) {
  return error{errc::transform_error, "sample " + std::to_string(s.sample_id) + " (" + s.key +
                                          "): step " + std::to_string(s.next_step) +
                                          " threw: " + e.what()};
}

}  // namespace

expected<void> run_step(const transform_chain& chain, sample_state& s, pipeline_status& status) {
  try {
    auto ok = chain.run_next(s);
    if (ok) {
      status.count_step();
    }
    return ok;
  } catch (const std::exception& e) {
    return thrown(s, e);
  }
}

expected<bool> advance_external(const transform_chain& chain, sample_state& s,
                                pipeline_status& status, std::chrono::nanoseconds timeout) {
  try {
    auto ended = chain.advance_external(s, timeout);
    if (ended && *ended) {
      status.count_step();
    }
    return ended;
  } catch (const std::exception& e) {
    s.pending.reset();
    return thrown(s, e);
  }
}

expected<bool> step_or_wait(const transform_chain& chain, sample_state& s, pipeline_status& status,
                            std::chrono::nanoseconds slice) {
  if (chain.next_is_external(s)) {
    return advance_external(chain, s, status, slice);
  }
  if (auto ran = run_step(chain, s, status); !ran) {
    return ran.error();
  }
  return true;
}

namespace {

// Elements of field `index` of `s` (an image's height x width x channels); 0 when absent.
std::int64_t element_count(const sample_state& s, std::size_t index) {
  const auto& f = s.fields[index];
  if (!f.present) {
    return 0;
  }
  if (f.is_image()) {
    return static_cast<std::int64_t>(f.image.total()) * f.image.channels();
  }
  return static_cast<std::int64_t>(f.array.element_count());
}

}  // namespace

bool past_budget(const transform_chain& chain, sample_state& s, const budget_figures& b,
                 std::int64_t elapsed_ns) {
  const auto cost = chain.next_cost(s);
  if (s.next_step == 0 && cost.how != step_cost::kind::external) {
    return s.source_pixels > b.straggler_pixels;
  }
  if (cost.how == step_cost::kind::cheap) {
    return false;
  }
  if (cost.how == step_cost::kind::per_element) {
    const auto size = element_count(s, cost.field);
    if (s.source_pixels == 0) {
      s.source_pixels = size;
    }
    if (size > b.straggler_pixels) {
      return true;
    }
  }
  return elapsed_ns > b.budget_ns;
}

expected<prepared_ptr> make_prepared(const transform_chain& chain, const sample_schema& schema,
                                     const sample_ticket& ticket, sample_state& s,
                                     bool handed_off) {
  auto fields = chain.take_fields(s);
  if (!fields) {
    return std::move(fields).error();
  }
  for (std::size_t i = 0; i < fields->size(); ++i) {
    if (auto why = unfit_for_batch(schema.fields[i], (*fields)[i])) {
      return error{errc::transform_error, sample_location(s) + ": " + *why};
    }
  }
  auto out = std::make_shared<prepared_sample>();
  out->ticket = ticket;
  out->key = std::move(s.key);
  out->fields = std::move(*fields);
  out->step_ns = std::move(s.step_ns);
  out->source_pixels = s.source_pixels;
  out->handed_off = handed_off;
  out->prepared_at = std::chrono::steady_clock::now();
  return prepared_ptr(std::move(out));
}

std::int64_t header_pixels(const std::vector<std::uint8_t>& encoded) {
  if (!is_jpeg(encoded.data(), encoded.size())) {
    return 0;
  }
  auto info = probe_image(encoded);
  return info ? static_cast<std::int64_t>(info->width) * info->height : 0;
}

}  // namespace conveyor

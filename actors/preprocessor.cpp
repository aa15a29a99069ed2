#include "actors/preprocessor.hpp"

#include <caf/all.hpp>
#include "core/log.hpp"

#include <exception>

namespace conveyor {
namespace {

struct preprocessor_state {
  static inline const char* name = "preprocessor";
  std::unique_ptr<actor_metrics> metrics;
};

using preprocessor_pointer = preprocessor_actor::stateful_pointer<preprocessor_state>;

sample_state start_state(raw_sample& raw) {
  sample_state s;
  s.sample_id = raw.ticket.sample_id;
  s.key = std::move(raw.key);
  s.label = raw.label;
  s.epoch_seed = raw.ticket.epoch_seed;
  s.encoded = std::move(raw.bytes);
  return s;
}

// Runs the whole chain; an exception (a bug or an OpenCV surprise) becomes an error value so
// that one bad sample never takes the actor down.
expected<void> run_chain(const transform_chain& chain, sample_state& s) {
  try {
    return chain.run_all(s);
  } catch (const std::exception& e) {
    return error{errc::transform_error, "sample " + std::to_string(s.sample_id) + " (" + s.key +
                                            "): step " + std::to_string(s.next_step) +
                                            " threw: " + e.what()};
  }
}

void prepare(preprocessor_pointer self, const preprocessor_options& opts, raw_sample& raw) {
  auto start = std::chrono::steady_clock::now();
  if (raw.error_code != 0) {
    self->send(opts.batcher, atoms::failed::value, opts.index,
               sample_failure{raw.ticket, std::move(raw.key), std::move(raw.error_message)});
    return;
  }
  auto ticket = raw.ticket;
  auto s = start_state(raw);
  if (auto ok = run_chain(opts.chain, s); !ok) {
    self->send(opts.batcher, atoms::failed::value, opts.index,
               sample_failure{ticket, std::move(s.key), ok.error().what()});
    return;
  }
  auto out = std::make_shared<prepared_sample>();
  out->ticket = ticket;
  out->key = std::move(s.key);
  out->label = s.label;
  out->tensor = std::move(s.output);
  out->step_ns = std::move(s.step_ns);
  self->send(opts.batcher, atoms::prepared::value, opts.index, prepared_ptr(std::move(out)));
  self->state.metrics->record(elapsed_ns(start));
}

preprocessor_actor::behavior_type preprocessor(preprocessor_pointer self,
                                               preprocessor_options opts) {
  self->state.metrics =
      std::make_unique<actor_metrics>("preprocessor-" + std::to_string(opts.index));
  start_reporting(self, opts.report);
  return {
      // Mutable: the reader's message is not shared, so its bytes move out without a copy.
      [self, opts](atoms::prepare, raw_sample& raw) { prepare(self, opts, raw); },
      [self, opts](atoms::tick) { report_and_rearm(self, opts.report, *self->state.metrics); },
  };
}

}  // namespace

preprocessor_actor spawn_preprocessor(caf::actor_system& sys, preprocessor_options options) {
  return sys.spawn<caf::detached>(preprocessor, std::move(options));
}

}  // namespace conveyor

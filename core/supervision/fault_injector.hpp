#pragma once
/// Injected failures for tests and operators' drills ([faults] in the topology; off by
/// default): a worker crashes while it holds a sample, a sample is delayed, a read fails.
/// Every draw depends only on the seed, the sample and how often it was issued before, never
/// on timing, so a drill is reproducible.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/base/worker_role.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/supervision/activity_slot.hpp"

namespace conveyor {

struct fault_plan {
  double crash_reader = 0.0;        ///< probability per read
  double crash_preprocessor = 0.0;  ///< probability per sample
  double crash_straggler = 0.0;     ///< probability per finished sample
  double delay_ms = 0.0;            ///< extra time of a delayed sample (in a preprocessor)
  double delay_probability = 0.0;
  double read_error = 0.0;  ///< probability per read
  std::uint64_t seed = 0;

  bool enabled() const noexcept {
    return crash_reader > 0 || crash_preprocessor > 0 || crash_straggler > 0 ||
           (delay_ms > 0 && delay_probability > 0) || read_error > 0;
  }
};

/// What an injected crash throws; it is meant to escape the actor's handler and kill it.
class injected_crash : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Immutable: shared by every worker, callable from any thread.
class fault_injector {
 public:
  explicit fault_injector(fault_plan plan) : plan_(plan) {}

  /// Throws injected_crash when the draw says `role` crashes on this attempt.
  void maybe_crash(worker_role role, const sample_ticket& t) const;
  /// Waits the injected delay when drawn; returns early once `slot` is abandoned.
  void maybe_delay(const sample_ticket& t, const activity_slot& slot) const;
  /// True when this read is to fail with an I/O error.
  bool read_fails(const sample_ticket& t) const;

 private:
  enum class fault : std::uint64_t {
    crash_reader,
    crash_preprocessor,
    crash_straggler,
    delay,
    read
  };
  bool drawn(fault kind, double probability, const sample_ticket& t) const;

  fault_plan plan_;
};

}  // namespace conveyor

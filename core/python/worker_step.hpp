#pragma once
/// The part every step that runs its work in a Python worker of a pool shares (a Python
/// Dataset's dataset[i]: python_step.hpp; a topology's Python step: python_transform.hpp): an
/// actor takes a worker for the sample as a lease and asks it; the lease moves with the sample
/// while it waits (a hand-off to a straggler actor takes the worker along); a worker that has
/// not answered within `hang_timeout` is killed (the pool starts another) and the sample fails,
/// to be retried, then quarantined. A worker found dead when asked (it died idle: the sample
/// never reached it) is not the sample's failure: the next one is asked. A worker that answered
/// goes back to the pool, warm; one that died or broke the protocol frees its place.

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "conveyor/error.hpp"
#include "core/python/worker_pool.hpp"
#include "core/transforms/external_step.hpp"

namespace conveyor {

class worker_step : public external_step {
 public:
  expected<void> begin(sample_state& sample, std::mt19937_64& rng) const final;
  expected<bool> wait(sample_state& sample, std::chrono::nanoseconds timeout) const final;
  std::vector<external_process_figures> processes() const final { return pool_->figures(); }

 protected:
  worker_step(std::shared_ptr<worker_pool> pool, std::chrono::milliseconds hang_timeout)
      : pool_(std::move(pool)), hang_timeout_(hang_timeout) {}
  /// Asks `worker` for the work on `sample`, its draws seeded by `seed`.
  virtual expected<void> ask(worker_process& worker, const sample_state& sample,
                             std::uint64_t seed) const = 0;
  /// Writes what the worker answered into `sample`'s fields, checking all of it first (a
  /// refused answer leaves the sample as it was), its bytes copied out of the worker's memfd:
  /// errc::transform_error naming the sample, the field and what is wrong.
  virtual expected<void> write_fields(sample_state& sample, const worker_sample& got) const = 0;
  /// `e`, naming the sample unless it does.
  static error failure(const sample_state& sample, const error& e);

 private:
  std::shared_ptr<worker_pool> pool_;
  std::chrono::milliseconds hang_timeout_;
};

}  // namespace conveyor

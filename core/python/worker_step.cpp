#include "core/python/worker_step.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace conveyor {
namespace {

using clock_type = std::chrono::steady_clock;

// The work of one sample in flight: the worker leased for it, and when it must have answered.
class worker_pending final : public pending_work {
 public:
  worker_pending(worker_lease leased, clock_type::time_point until)
      : lease(std::move(leased)), deadline(until) {}
  // Abandoned before its answer (the sample failed elsewhere, its actor died): the worker is
  // still at it and is no use to the next sample.
  ~worker_pending() override {
    if (!answered) {
      lease->kill();
    }
  }
  worker_pending(const worker_pending&) = delete;
  worker_pending& operator=(const worker_pending&) = delete;

  worker_lease lease;
  clock_type::time_point deadline;
  bool answered = false;
};

}  // namespace

error worker_step::failure(const sample_state& sample, const error& e) {
  if (e.message().rfind(sample.key, 0) == 0) {
    return e;
  }
  return error{e.code(), sample.key + ": " + e.message()};
}

expected<void> worker_step::begin(sample_state& sample, std::mt19937_64& rng) const {
  const auto seed = rng();  // the same draws whichever worker takes the sample
  // A worker that died idle (killed with its zygote, say) is found out when it is asked: the
  // sample never reached it, so it is not the sample's failure; the next worker is asked (its
  // place freed, a new one forked), up to one more than the pool's places.
  for (std::size_t tries = 0;; ++tries) {
    auto lease = pool_->take();
    if (!lease) {
      return failure(sample, lease.error());
    }
    auto asked = ask(**lease, sample, seed);
    if (asked) {
      lease->asked();
      sample.pending =
          std::make_unique<worker_pending>(std::move(*lease), clock_type::now() + hang_timeout_);
      return {};
    }
    if ((*lease)->alive() || tries == pool_->capacity()) {
      return failure(sample, asked.error());
    }
  }
}

expected<bool> worker_step::wait(sample_state& sample, std::chrono::nanoseconds timeout) const {
  auto& p = static_cast<worker_pending&>(*sample.pending);
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

}  // namespace conveyor

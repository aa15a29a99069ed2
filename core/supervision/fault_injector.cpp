#include "core/supervision/fault_injector.hpp"

#include <thread>

#include "core/base/sample_seed.hpp"

namespace conveyor {

bool fault_injector::drawn(fault kind, double probability, const sample_ticket& t) const {
  if (probability <= 0.0) {
    return false;
  }
  auto h = splitmix64(plan_.seed ^ splitmix64(static_cast<std::uint64_t>(kind)));
  h = splitmix64(h ^ t.epoch);
  h = splitmix64(h ^ t.sample_id);
  h = splitmix64(h ^ t.retry);
  constexpr double to_unit = 1.0 / 18446744073709551616.0;  // 2^-64
  return static_cast<double>(h) * to_unit < probability;
}

void fault_injector::maybe_crash(worker_role role, const sample_ticket& t) const {
  static constexpr fault kinds[] = {fault::crash_reader, fault::crash_preprocessor,
                                    fault::crash_straggler};
  const double probabilities[] = {plan_.crash_reader, plan_.crash_preprocessor,
                                  plan_.crash_straggler};
  auto r = static_cast<std::size_t>(role);
  if (drawn(kinds[r], probabilities[r], t)) {
    throw injected_crash("injected crash (faults.crash_" + std::string(to_string(role)) +
                         ") on sample " + std::to_string(t.sample_id));
  }
}

void fault_injector::maybe_delay(const sample_ticket& t, const activity_slot& slot) const {
  if (plan_.delay_ms <= 0.0 || !drawn(fault::delay, plan_.delay_probability, t)) {
    return;
  }
  using namespace std::chrono;
  auto until = steady_clock::now() +
               duration_cast<nanoseconds>(duration<double, std::milli>(plan_.delay_ms));
  while (steady_clock::now() < until && !slot.abandoned()) {
    std::this_thread::sleep_for(std::min<nanoseconds>(until - steady_clock::now(), 5ms));
  }
}

bool fault_injector::read_fails(const sample_ticket& t) const {
  return drawn(fault::read, plan_.read_error, t);
}

}  // namespace conveyor

#pragma once
/// The monitor's interface: every actor reports its figures to it now and then.

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "messages/atoms.hpp"

namespace conveyor {

/// A figure of an actor's role as a number (a feeder's free slots), for /metrics:
/// `conveyor_<role>_<name>{actor="..."}`. `name` in snake_case, base units.
struct role_gauge {
  std::string name;
  std::int64_t value = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, role_gauge& x) {
  return f(caf::meta::type_name("role_gauge"), x.name, x.value);
}

/// One actor's figures at one moment. Latencies in microseconds (integers: no floats in
/// messages).
struct actor_report {
  std::string name;               ///< e.g. "preprocessor-3"
  std::uint64_t mailbox = 0;      ///< messages waiting in its mailbox
  std::uint64_t items = 0;        ///< items handled since start
  std::uint64_t items_per_s = 0;  ///< over the last few seconds
  std::int64_t p50_us = 0;
  std::int64_t p90_us = 0;
  std::int64_t p99_us = 0;
  std::string extra;  ///< role-specific figures, "key=value ..."
  /// Items handled since start per latency bucket (latency_histogram's: one per bound and one
  /// above them; empty when the actor keeps none), and their summed latency.
  std::vector<std::uint64_t> latency_counts;
  std::int64_t latency_sum_ns = 0;
  std::vector<role_gauge> gauges;  ///< the role's figures as numbers (some of `extra`'s)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_report& x) {
  return f(caf::meta::type_name("actor_report"), x.name, x.mailbox, x.items, x.items_per_s,
           x.p50_us, x.p90_us, x.p99_us, x.extra, x.latency_counts, x.latency_sum_ns, x.gauges);
}

/// `tick` answers with the number of reports logged so far: a sender that asks after its
/// reports knows they have all been handled (mailboxes are FIFO per sender).
using monitor_actor = caf::typed_actor<caf::reacts_to<atoms::report, actor_report>,
                                       caf::replies_to<atoms::tick>::with<std::uint64_t>>;

}  // namespace conveyor

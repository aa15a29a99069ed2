#pragma once
/// The figures a preprocessor needs to decide a hand-off, as the batcher sends them. Part of
/// the message contract (messages/sample_messages.hpp): two integers, so they may cross the
/// wire.

#include <cstdint>

#include "core/batching/latency_budget.hpp"

namespace conveyor {

/// What preprocessors need to decide a hand-off: two integers (they may cross the wire).
struct budget_figures {
  std::int64_t budget_ns = latency_budget::no_hand_off;         ///< hand off once past this
  std::int64_t straggler_pixels = latency_budget::no_hand_off;  ///< hand off before decode
  bool operator==(const budget_figures& o) const noexcept {
    return budget_ns == o.budget_ns && straggler_pixels == o.straggler_pixels;
  }
};

}  // namespace conveyor

#pragma once
/// Message payloads that carry samples between reader, preprocessor and batcher.

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/batching/budget_figures.hpp"
#include "core/batching/prepared_sample.hpp"
#include "core/transforms/sample_state.hpp"

namespace conveyor {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sample_ticket& x) {
  return f(caf::meta::type_name("sample_ticket"), x.epoch, x.seq, x.sample_id, x.epoch_seed,
           x.attempt, x.retry);
}

/// A sample's encoded bytes as read from storage, on its way to a preprocessor; or, when
/// `error_code` is not 0, why it could not be read (the preprocessor reports it as failed).
struct raw_sample {
  sample_ticket ticket;
  std::string key;
  std::int32_t label = 0;
  std::vector<std::uint8_t> bytes;
  bool multipart = false;                 ///< `bytes` is a part container (record::multipart)
  std::vector<std::uint32_t> in_place{};  ///< record::in_place
  std::uint8_t error_code = 0;            ///< a conveyor::errc value, 0 when the read succeeded
  std::string error_message;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, raw_sample& x) {
  return f(caf::meta::type_name("raw_sample"), x.ticket, x.key, x.label, x.bytes, x.multipart,
           x.in_place, x.error_code, x.error_message);
}

/// A sample that could not be read or prepared; the batcher retries, then quarantines it. Or,
/// with `filtered`, one the recipe's filter left out (errc::filtered): counted, not retried.
struct sample_failure {
  sample_ticket ticket;
  std::string key;
  std::string reason;  ///< the error, naming file/shard, record and step
  bool filtered = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sample_failure& x) {
  return f(caf::meta::type_name("sample_failure"), x.ticket, x.key, x.reason, x.filtered);
}

/// The failure message of `e` for the sample of `ticket` (filtered when e says so).
inline sample_failure failure_of(const sample_ticket& ticket, std::string key, const error& e) {
  return {ticket, std::move(key), e.what(), e.code() == errc::filtered};
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, budget_figures& x) {
  return f(caf::meta::type_name("budget_figures"), x.budget_ns, x.straggler_pixels);
}

/// A sample over its latency budget, handed mid-chain from a preprocessor to a straggler
/// actor: its state holds the intermediate result and where in the chain it stopped, so no
/// step runs twice.
struct handoff {
  sample_ticket ticket;
  std::shared_ptr<sample_state> state;
};

}  // namespace conveyor

// Handed-off samples, prepared samples and batch plans hold ref-counted tensors shared zero-copy
// between local actors. They never cross the network (they are not serializable).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(conveyor::prepared_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(conveyor::batch_plan)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(conveyor::handoff)

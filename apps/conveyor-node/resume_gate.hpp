#pragma once
/// What a serving node does with the resume states its clients attach with (serve.resume),
/// as plain functions: each state is checked against the node's run when it arrives, before any
/// work proportional to what it claims, so that a bad state refuses its own client and nobody
/// else; then, once a client of every rank waits, the start is the union of each job's ranks'
/// states, and every job must stand at the same point (the jobs share one pipeline).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/unique_fd.hpp"
#include "core/batching/resume_state.hpp"
#include "core/serving/state_key.hpp"

namespace conveyor {

/// The run a node serves: what a resume state must name to be of it.
struct run_identity {
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  sample_order order{};
  std::uint64_t epochs = 0;
};

/// The resume state a client sent in `fd` (its first `bytes` bytes), as rank `rank` of job
/// `job`: read only up to what a state of `run` can be (max_encoded_size), its signature
/// checked when the node has a `key` (an unsigned or foreign-signed state is refused then),
/// decoded and checked to be of `run`. Errors name `who` and say why.
expected<resume_state> read_client_state(int fd, std::uint64_t bytes, std::uint32_t job,
                                         std::uint32_t rank, const run_identity& run,
                                         const state_key* key, const std::string& who);

/// One waiting rank's state: its job, and what it attached with (nullopt: none).
struct waiting_state {
  std::uint32_t job = 0;
  std::optional<resume_state> state;
};

/// The state the pipeline starts from: per job the union of its ranks' states
/// (merge_states), which must be the same for every job of the node's `jobs`; nullopt when
/// no rank had one. errc::invalid_argument naming each job's delivered count when the jobs
/// stand at different points.
expected<std::optional<resume_state>> start_state(const std::vector<waiting_state>& waiting,
                                                  int jobs, const run_identity& run);

}  // namespace conveyor

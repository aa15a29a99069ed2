#include "apps/conveyor-node/resume_gate.hpp"

#include "core/serving/blob_fd.hpp"

namespace conveyor {
namespace {

// `s` with the epochs it has wholly delivered counted as complete, and no empty epochs at its
// end: two states of the same deliveries encode alike.
resume_state normalized(resume_state s) {
  while (!s.begun.empty() && s.begun.front().complete()) {
    s.begun.erase(s.begun.begin());
    ++s.first_epoch;
  }
  while (!s.begun.empty() && s.begun.back().count() == 0) {
    s.begun.pop_back();
  }
  return s;
}

// Job `job`'s ranks' states merged, or a fresh state when none of its ranks had one.
expected<resume_state> job_state(const std::vector<waiting_state>& waiting, std::uint32_t job,
                                 const run_identity& run) {
  std::vector<resume_state> states;
  for (const auto& w : waiting) {
    if (w.job == job && w.state) {
      states.push_back(*w.state);
    }
  }
  if (states.empty()) {
    return resume_state{run.dataset_size, run.seed, run.order, run.epochs, 0, {}};
  }
  auto merged = merge_states(states, "the resume states of job " + std::to_string(job));
  if (!merged) {
    return merged;
  }
  return normalized(std::move(*merged));
}

}  // namespace

expected<resume_state> read_client_state(int fd, std::uint64_t bytes, std::uint32_t job,
                                         std::uint32_t rank, const run_identity& run,
                                         const state_key* key, const std::string& who) {
  const auto what = who + "'s resume state";
  auto blob = read_blob_fd(fd, bytes, max_encoded_size(run.dataset_size), what);
  if (!blob) {
    return std::move(blob).error();
  }
  if (key != nullptr && !key->verify(split_signature(*blob), job, rank)) {
    return error{errc::permission_denied,
                 what + " is not signed by this node's key (serve.state_key_file) as rank " +
                     std::to_string(rank) + " of job " + std::to_string(job) +
                     "'s: refused (a state is signed when the client takes it from a node "
                     "with that key)"};
  }
  auto state = decode(*blob, what);
  if (!state) {
    return state;
  }
  if (auto same = check_same_run(*state, run.dataset_size, run.seed, run.order, run.epochs);
      !same) {
    return error{errc::invalid_argument, what + ": " + same.error().message()};
  }
  return state;
}

expected<std::optional<resume_state>> start_state(const std::vector<waiting_state>& waiting,
                                                  int jobs, const run_identity& run) {
  bool any = false;
  for (const auto& w : waiting) {
    any = any || w.state.has_value();
  }
  if (!any) {
    return std::optional<resume_state>{};
  }
  std::vector<resume_state> per_job;
  for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(jobs); ++j) {
    auto s = job_state(waiting, j, run);
    if (!s) {
      return std::move(s).error();
    }
    per_job.push_back(std::move(*s));
  }
  const auto first = encode(per_job.front());
  for (std::size_t j = 1; j < per_job.size(); ++j) {
    if (encode(per_job[j]) != first) {
      std::string counts;
      for (std::size_t k = 0; k < per_job.size(); ++k) {
        counts += (k == 0 ? "" : ", ") + std::string("job ") + std::to_string(k) + " had " +
                  std::to_string(per_job[k].delivered_count()) + " samples";
      }
      return error{errc::invalid_argument,
                   "the jobs' resume states stand at different points (" + counts +
                       "): this node prepares one pipeline for all its jobs and can resume them "
                       "only from the same point; resume every job from checkpoints taken after "
                       "the same batch, or serve the jobs from separate nodes"};
    }
  }
  return std::optional<resume_state>(std::move(per_job.front()));
}

}  // namespace conveyor

#include "apps/conveyor-node/state_notary.hpp"

namespace conveyor {
namespace {

// A client's record: one rank, keeping the epoch it ended last (as client.cpp's).
std::unique_ptr<delivery_tracker> rank_tracker(resume_state start) {
  return std::make_unique<delivery_tracker>(std::move(start), 1, 1);
}

}  // namespace

state_notary::state_notary(const run_identity& run, int jobs, int ranks, const state_key& key)
    : run_(run), jobs_(static_cast<std::uint32_t>(jobs)), key_(key) {
  for (int i = 0; i < jobs * ranks; ++i) {
    trackers_.push_back(rank_tracker({run.dataset_size, run.seed, run.order, run.epochs, 0, {}}));
  }
}

delivery_tracker& state_notary::tracker(std::uint32_t job, std::uint32_t rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return *trackers_[static_cast<std::size_t>(rank) * jobs_ + job];
}

void state_notary::vouch_for(std::uint32_t job, std::uint32_t rank, const resume_state& state) {
  auto merged = merge_states({tracker(job, rank).state(), state}, "a vouched state");
  if (!merged) {
    return;  // of another run: read_client_state refused it before
  }
  auto fresh = rank_tracker(std::move(*merged));
  std::lock_guard<std::mutex> lock(mutex_);
  trackers_[static_cast<std::size_t>(rank) * jobs_ + job] = std::move(fresh);
}

void state_notary::published(int rank, std::uint64_t epoch,
                             const std::vector<std::uint64_t>& sample_ids, bool last_in_epoch) {
  for (std::uint32_t job = 0; job < jobs_; ++job) {
    tracker(job, static_cast<std::uint32_t>(rank)).record(0, epoch, sample_ids, last_in_epoch);
  }
}

expected<state_signature> state_notary::sign(std::uint32_t job, std::uint32_t rank,
                                             const std::vector<std::uint8_t>& blob) const {
  const auto who = "rank " + std::to_string(rank) + " of job " + std::to_string(job);
  auto state = decode(blob, who + "'s state to sign");
  if (!state) {
    return std::move(state).error();
  }
  if (auto same = check_same_run(*state, run_.dataset_size, run_.seed, run_.order, run_.epochs);
      !same) {
    return error{errc::invalid_argument, who + "'s state to sign: " + same.error().message()};
  }
  if (!claims_within(*state, tracker(job, rank).state())) {
    return error{
        errc::permission_denied,
        who + "'s state to sign claims samples this node did not send to " + who + ": not signed"};
  }
  return key_.sign(split_signature(blob).state, job, rank);
}

}  // namespace conveyor

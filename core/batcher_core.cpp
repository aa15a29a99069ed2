#include "core/batcher_core.hpp"

#include <algorithm>

#include "core/epoch_order.hpp"

namespace conveyor {

batcher_core::batcher_core(batcher_settings settings, std::unique_ptr<batch_policy> policy)
    : settings_(settings),
      policy_(std::move(policy)),
      ledger_(settings.dataset_size),
      worker_load_(static_cast<std::size_t>(settings.workers), 0),
      credits_(static_cast<std::size_t>(settings.gpus), 0),
      budget_(settings.budget) {}

// Begins the next epoch as soon as the current one is fully dispatched, so the policy knows
// of it and a GPU done with its part of the epoch can move on.
void batcher_core::roll_epoch() {
  while (position_ == order_.size() && begun_ < settings_.epochs) {
    order_ = epoch_order(settings_.dataset_size, settings_.seed, begun_, settings_.shuffle);
    policy_->begin_epoch(begun_, settings_.dataset_size);
    ++begun_;
    position_ = 0;
  }
}

bool batcher_core::next_ticket(sample_ticket& out) {
  roll_epoch();
  if (position_ == order_.size()) {
    return false;
  }
  auto epoch = begun_ - 1;
  out = {epoch, position_, order_[position_], epoch_seed(settings_.seed, epoch)};
  ++position_;
  roll_epoch();
  return true;
}

int batcher_core::least_loaded_worker() const {
  auto it = std::min_element(worker_load_.begin(), worker_load_.end());
  return *it < settings_.per_worker_limit ? static_cast<int>(it - worker_load_.begin()) : -1;
}

std::vector<dispatch_order> batcher_core::take_dispatches() {
  std::vector<dispatch_order> out;
  sample_ticket ticket;
  while (in_flight_ < settings_.window_samples) {
    int worker = least_loaded_worker();
    if (worker < 0 || !next_ticket(ticket)) {
      break;
    }
    ++worker_load_[static_cast<std::size_t>(worker)];
    ++in_flight_;
    out.push_back({ticket, worker});
  }
  peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
  return out;
}

void batcher_core::free_worker(int worker) {
  if (worker >= 0) {
    --worker_load_[static_cast<std::size_t>(worker)];
  }
}

void batcher_core::on_prepared(prepared_ptr sample, int worker) {
  free_worker(worker);
  // Work time only (the steps, wherever they ran): queueing would feed on itself, since
  // hand-offs add queueing and a higher budget hands off less.
  std::int64_t work = 0;
  for (auto ns : sample->step_ns) {
    work += ns;
  }
  budget_.record(work, sample->source_pixels);
  policy_->add(std::move(sample));
}

void batcher_core::on_handed_off(int worker) {
  free_worker(worker);
  ++handoffs_;
}

budget_figures batcher_core::current_budget() const {
  if (!settings_.hand_off) {
    return {};
  }
  if (settings_.fixed_budget_ns > 0) {
    return {settings_.fixed_budget_ns, latency_budget::no_hand_off};
  }
  return {budget_.budget_ns(), budget_.straggler_pixels()};
}

std::optional<budget_figures> batcher_core::take_budget_update() {
  auto now = current_budget();
  if (now == sent_budget_) {
    return std::nullopt;
  }
  sent_budget_ = now;
  return now;
}

void batcher_core::on_failed(const sample_ticket& ticket, int worker, std::string key,
                             std::string reason) {
  free_worker(worker);
  --in_flight_;
  policy_->drop(ticket.epoch, ticket.seq);
  ledger_.quarantine({ticket.epoch, ticket.sample_id, std::move(key), std::move(reason)});
}

void batcher_core::on_credit(int gpu, std::uint64_t batches) {
  credits_[static_cast<std::size_t>(gpu)] += batches;
}

void batcher_core::on_released(std::uint64_t samples) {
  in_flight_ -= std::min(samples, in_flight_);
}

void batcher_core::record_delivery(const batch_plan& plan) {
  for (const auto& s : plan.samples) {
    ledger_.deliver(s->ticket.epoch, s->ticket.sample_id);
  }
  ended_epochs_ += plan.last_in_epoch ? 1 : 0;
}

std::vector<batch_plan> batcher_core::take_batches() {
  std::vector<batch_plan> out;
  for (int gpu = 0; gpu < settings_.gpus; ++gpu) {
    auto& credit = credits_[static_cast<std::size_t>(gpu)];
    while (credit > 0) {
      auto plan = policy_->take(gpu);
      if (!plan) {
        break;
      }
      --credit;
      record_delivery(*plan);
      out.push_back(std::move(*plan));
    }
  }
  return out;
}

}  // namespace conveyor

#include "core/batching/batcher_core.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "core/base/monotonic_clock.hpp"
#include "core/batching/epoch_order.hpp"

namespace conveyor {

std::uint64_t default_window(std::uint64_t prefetch_batches, batching_policy policy,
                             const batcher_settings& s) {
  const auto waiting = s.buckets.enabled() ? s.buckets.buckets() * (s.batch_size - 1) : 0;
  const auto held = static_cast<std::uint64_t>(s.workers) * s.per_worker_limit;
  const std::uint64_t lookahead = policy == batching_policy::in_order ? 6 : 2;
  return (prefetch_batches + 1) * s.batch_size * static_cast<std::uint64_t>(s.gpus) + waiting +
         lookahead * held;
}

batcher_core::batcher_core(batcher_settings settings, std::unique_ptr<batch_policy> policy,
                           sample_namer name)
    : settings_(settings),
      name_(name ? std::move(name)
                 : [](std::uint64_t id) { return "sample " + std::to_string(id); }),
      policy_(std::move(policy)),
      ledger_(settings.dataset_size, settings.share.size(settings.dataset_size)),
      worker_load_(static_cast<std::size_t>(settings.workers), 0),
      straggler_load_(static_cast<std::size_t>(settings.stragglers), 0),
      permit_held_(static_cast<std::size_t>(settings.workers), false),
      credits_(static_cast<std::size_t>(settings.gpus), 0),
      progress_(static_cast<std::size_t>(settings.gpus)),
      occupancy_(settings.window_samples),
      budget_(settings.budget) {
  if (settings_.resume) {
    begun_ = settings_.resume->first_epoch;
    ended_epochs_ = begun_ * gpu_count();
  }
  // Every worker starts down: it is up once its supervisor says it runs.
  up(worker_role::reader).assign(static_cast<std::size_t>(settings.readers), false);
  up(worker_role::preprocessor).assign(static_cast<std::size_t>(settings.workers), false);
  up(worker_role::straggler).assign(static_cast<std::size_t>(settings.stragglers), false);
  for (std::size_t r = 0; r < worker_role_count; ++r) {
    active_[r] = static_cast<int>(up_[r].size());
  }
}

bool batcher_core::usable(worker_role role, std::size_t index) const noexcept {
  const auto r = static_cast<std::size_t>(role);
  return index < up_[r].size() && up_[r][index] && static_cast<int>(index) < active_[r];
}

void batcher_core::set_active(worker_role role, int count) {
  const auto r = static_cast<std::size_t>(role);
  const int least = role == worker_role::straggler ? 0 : 1;
  active_[r] = std::clamp(count, std::min(least, static_cast<int>(up_[r].size())),
                          static_cast<int>(up_[r].size()));
}

void batcher_core::set_window(std::uint64_t samples) {
  settings_.window_samples = std::max<std::uint64_t>(samples, 1);
  occupancy_.resize(settings_.window_samples, in_flight_, monotonic_ns());
}

bool batcher_core::is_up(worker_role role, int index) const {
  const auto& v = up_[static_cast<std::size_t>(role)];
  return index >= 0 && static_cast<std::size_t>(index) < v.size() &&
         v[static_cast<std::size_t>(index)];
}

// Begins the next epoch as soon as the current one is fully dispatched, so the policy knows
// of it and a GPU done with its part of the epoch can move on.
void batcher_core::roll_epoch() {
  while (position_ == order_.size() && begun_ < settings_.epochs) {
    order_ = epoch_order(settings_.dataset_size, settings_.seed, begun_, settings_.order);
    keep_what_is_due(begun_);
    mark_spans(begun_);
    policy_->begin_epoch(begun_, order_.size());
    ++begun_;
    position_ = 0;
  }
}

// Keeps of `epoch`'s order this node's share, less what a resumed run had delivered (the
// ledger counts that).
void batcher_core::keep_what_is_due(std::uint64_t epoch) {
  const auto& r = settings_.resume;
  const bool resumed = r && epoch >= r->first_epoch && epoch - r->first_epoch < r->begun.size();
  const auto& share = settings_.share;
  if (!resumed && share.world == 1) {
    return;
  }
  std::size_t kept = 0;
  for (std::uint64_t p = 0; p < order_.size(); ++p) {
    if (!share.contains(p, order_[p])) {
      continue;
    }
    if (resumed && r->delivered(epoch, p)) {
      ledger_.deliver(epoch, order_[p]);
    } else {
      order_[kept++] = order_[p];
    }
  }
  order_.resize(kept);
}

void batcher_core::mark_spans(std::uint64_t epoch) {
  span_ends_.clear();
  const auto& o = settings_.order;
  if (o.mode != shuffle_mode::blocks) {
    return;
  }
  const auto spans = block_spans(settings_.dataset_size, settings_.seed, epoch, o);
  for (std::uint64_t p = 1; p <= order_.size(); ++p) {
    if (p == order_.size() || spans[order_[p] / o.block] != spans[order_[p - 1] / o.block]) {
      span_ends_.push_back(p);
    }
  }
}

std::uint64_t batcher_core::read_ahead_end(std::uint64_t ahead) const {
  auto end = std::min<std::uint64_t>(order_.size(), position_ + ahead);
  auto span = std::upper_bound(span_ends_.begin(), span_ends_.end(), position_);
  if (span != span_ends_.end()) {
    const auto next = std::next(span) == span_ends_.end() ? span : std::next(span);
    end = std::max(end, *next);
  }
  return end;
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

batcher_core::read_ahead_batch batcher_core::take_read_ahead(std::uint64_t ahead) {
  read_ahead_batch out;
  if (begun_ == 0) {
    return out;  // no epoch's order yet: the first dispatch makes it
  }
  if (told_epochs_ != begun_) {
    told_epochs_ = begun_;
    told_ = 0;
  }
  const auto end = read_ahead_end(ahead);
  out.epoch = begun_ - 1;
  if (told_ < end) {
    out.ids.assign(order_.begin() + static_cast<std::ptrdiff_t>(told_),
                   order_.begin() + static_cast<std::ptrdiff_t>(end));
    told_ = end;
  }
  return out;
}

// The least loaded preprocessor that is up and below its limit; -1 when there is none.
int batcher_core::least_loaded_worker() const {
  int best = -1;
  for (std::size_t w = 0; w < worker_load_.size(); ++w) {
    if (usable(worker_role::preprocessor, w) && worker_load_[w] < settings_.per_worker_limit &&
        (best < 0 || worker_load_[w] < worker_load_[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(w);
    }
  }
  return best;
}

// The next reader that is up, round robin; -1 when none is.
int batcher_core::next_reader() {
  const auto& readers = up(worker_role::reader);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    auto r = next_reader_++ % readers.size();
    if (usable(worker_role::reader, r)) {
      return static_cast<int>(r);
    }
  }
  return -1;
}

// Gives the ticket a fresh attempt and a reader and preprocessor; false when none is free.
bool batcher_core::dispatch_one(sample_ticket ticket, std::uint32_t failures,
                                std::vector<dispatch_order>& out) {
  int worker = least_loaded_worker();
  int reader = worker < 0 ? -1 : next_reader();
  if (reader < 0) {
    return false;
  }
  ticket.attempt = next_attempt_++;
  ++worker_load_[static_cast<std::size_t>(worker)];
  flights_.start({ticket, reader, worker, -1, false, failures});
  out.push_back({ticket, worker, reader});
  return true;
}

std::vector<dispatch_order> batcher_core::take_dispatches() {
  std::vector<dispatch_order> out;
  // Re-issued samples still hold their place in the window.
  std::size_t done = 0;
  while (done < reissued_.size() &&
         dispatch_one(reissued_[done].ticket, reissued_[done].failures, out)) {
    ++done;
  }
  reissued_.erase(reissued_.begin(), reissued_.begin() + static_cast<std::ptrdiff_t>(done));
  sample_ticket ticket;
  while (reissued_.empty() && in_flight_ < settings_.window_samples && least_loaded_worker() >= 0) {
    if (!next_ticket(ticket)) {
      break;
    }
    if (ticket.sample_id < filtered_.size() && filtered_[ticket.sample_id]) {
      leave_out(ticket);  // filtered before: not read again
      continue;
    }
    if (!dispatch_one(ticket, 0, out)) {
      reissued_.push_back({ticket, 0, 0, -1, false, 0});  // no reader is up: it waits
    }
    ++in_flight_;
  }
  peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
  occupancy_.update(in_flight_, monotonic_ns());
  return out;
}

void batcher_core::free_holder(const flight& f) {
  if (f.handed_off) {
    --handed_out_;
  }
  if (f.straggler >= 0) {
    --straggler_load_[static_cast<std::size_t>(f.straggler)];
  } else if (!f.handed_off) {
    --worker_load_[static_cast<std::size_t>(f.worker)];
  }
}

// The attempt's record, taken out; nullopt (and counted) when the attempt is stale.
std::optional<flight> batcher_core::finish(const sample_ticket& ticket) {
  auto f = flights_.finish(ticket.attempt);
  if (!f) {
    ++stale_;
    return std::nullopt;
  }
  free_holder(*f);
  return f;
}

bool batcher_core::on_prepared(prepared_ptr sample) {
  if (!finish(sample->ticket)) {
    return false;
  }
  // Work time only (the steps, wherever they ran): queueing would feed on itself, since
  // hand-offs add queueing and a higher budget hands off less.
  std::int64_t work = 0;
  step_ns_.resize(std::max(step_ns_.size(), sample->step_ns.size()), 0);
  for (std::size_t i = 0; i < sample->step_ns.size(); ++i) {
    work += sample->step_ns[i];
    step_ns_[i] += sample->step_ns[i];
  }
  ++prepared_;
  sample_work_.record(work);
  budget_.record(work, sample->source_pixels);
  policy_->add(std::move(sample));
  return true;
}

bool batcher_core::on_handed_off(const sample_ticket& ticket) {
  auto* f = flights_.find(ticket.attempt);
  if (f == nullptr || f->handed_off) {
    ++stale_;
    return false;
  }
  --worker_load_[static_cast<std::size_t>(f->worker)];
  f->handed_off = true;
  ++handed_out_;
  ++handoffs_;
  drop_permit(f->worker);  // the hand-off used it
  return true;
}

void batcher_core::drop_permit(int worker) {
  auto w = static_cast<std::size_t>(worker);
  permit_held_[w] = false;
}

std::uint64_t batcher_core::handoff_limit() const {
  if (!settings_.hand_off) {
    return 0;
  }
  std::uint64_t stragglers = 0;
  for (std::size_t s = 0; s < straggler_load_.size(); ++s) {
    stragglers += usable(worker_role::straggler, s) ? 1 : 0;
  }
  auto share = static_cast<std::uint64_t>(settings_.handoff_share *
                                          static_cast<double>(settings_.window_samples));
  return std::min(share, stragglers * (1 + settings_.straggler_backlog));
}

std::vector<int> batcher_core::take_permits() {
  std::vector<int> out;
  auto limit = handoff_limit();
  auto out_now = handed_out_ + static_cast<std::uint64_t>(
                                   std::count(permit_held_.begin(), permit_held_.end(), true));
  const auto& ups = up(worker_role::preprocessor);
  for (std::size_t i = 0; i < ups.size() && out_now < limit; ++i) {
    auto w = (next_permit_ + i) % ups.size();
    if (usable(worker_role::preprocessor, w) && !permit_held_[w]) {
      permit_held_[w] = true;
      ++out_now;
      out.push_back(static_cast<int>(w));
    }
  }
  if (!out.empty()) {
    next_permit_ = static_cast<std::size_t>(out.back()) + 1;
  }
  return out;
}

int batcher_core::route_handoff(const sample_ticket& ticket) {
  auto* f = flights_.find(ticket.attempt);
  if (f == nullptr) {
    return stale_handoff;
  }
  int best = no_straggler;
  const auto& ups = up(worker_role::straggler);
  for (std::size_t s = 0; s < ups.size(); ++s) {
    if (usable(worker_role::straggler, s) &&
        (best < 0 || straggler_load_[s] < straggler_load_[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(s);
    }
  }
  if (best >= 0) {
    f->straggler = best;
    ++straggler_load_[static_cast<std::size_t>(best)];
  }
  return best;
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

// Queues a new attempt at the sample; it keeps its place in the window.
void batcher_core::reissue(flight f) {
  f.ticket.attempt = 0;
  ++f.ticket.retry;
  f.straggler = -1;
  f.handed_off = false;
  ++retries_;
  auto at =
      std::upper_bound(reissued_.begin(), reissued_.end(), f, [](const flight& a, const flight& b) {
        return std::tie(a.ticket.epoch, a.ticket.seq) < std::tie(b.ticket.epoch, b.ticket.seq);
      });
  reissued_.insert(at, f);
}

failure_outcome batcher_core::charge_failure(flight f, std::string reason) {
  if (++f.failures <= settings_.max_sample_retries) {
    reissue(f);
    return failure_outcome::retried;
  }
  --in_flight_;
  const auto& t = f.ticket;
  policy_->drop(t.epoch, t.seq);
  ledger_.quarantine({t.epoch, t.sample_id, name_(t.sample_id),
                      std::move(reason) + " (failed " + std::to_string(f.failures) + " times)"});
  return failure_outcome::quarantined;
}

failure_outcome batcher_core::on_failed(const sample_ticket& ticket, std::string reason) {
  auto f = finish(ticket);
  if (!f) {
    return failure_outcome::stale;
  }
  return charge_failure(*f, std::move(reason));
}

void batcher_core::leave_out(const sample_ticket& ticket) {
  policy_->drop(ticket.epoch, ticket.seq);
  ledger_.filter(ticket.epoch, ticket.sample_id);
}

failure_outcome batcher_core::on_filtered(const sample_ticket& ticket) {
  if (!finish(ticket)) {
    return failure_outcome::stale;
  }
  --in_flight_;
  leave_out(ticket);
  if (filtered_.empty()) {
    filtered_.assign(settings_.dataset_size, false);
  }
  if (ticket.sample_id < filtered_.size() && !filtered_[ticket.sample_id]) {
    filtered_[ticket.sample_id] = true;
    ++filtered_samples_;
  }
  return failure_outcome::filtered;
}

std::size_t batcher_core::on_worker_down(worker_role role, int index, std::uint64_t culprit,
                                         const std::string& reason, std::uint64_t done_through) {
  up(role)[static_cast<std::size_t>(index)] = false;
  if (role == worker_role::preprocessor) {
    drop_permit(index);  // it died with it
  }
  auto held =
      flights_.take_held_by(role, index, role == worker_role::reader ? done_through + 1 : 0);
  for (auto& f : held) {
    free_holder(f);
    if (f.ticket.attempt == culprit) {
      charge_failure(f, reason);
    } else {
      reissue(f);
    }
  }
  return held.size();
}

void batcher_core::on_worker_up(worker_role role, int index) {
  up(role)[static_cast<std::size_t>(index)] = true;
}

void batcher_core::on_credit(int gpu, std::uint64_t batches) {
  credits_[static_cast<std::size_t>(gpu)] += batches;
}

void batcher_core::on_released(std::uint64_t samples) {
  in_flight_ -= std::min(samples, in_flight_);
  occupancy_.update(in_flight_, monotonic_ns());
}

void batcher_core::record_delivery(const batch_plan& plan) {
  for (const auto& s : plan.samples) {
    ledger_.deliver(s->ticket.epoch, s->ticket.sample_id);
  }
  ended_epochs_ += plan.last_in_epoch ? 1 : 0;
  auto& progress = progress_[static_cast<std::size_t>(plan.gpu)];
  if (plan.last_in_epoch) {
    progress = {progress.first + 1, 0};
  } else if (!plan.samples.empty()) {
    ++progress.second;
  }
}

std::vector<batch_plan> batcher_core::take_batches() {
  std::vector<batch_plan> out;
  policy_->set_window_full(in_flight_ >= settings_.window_samples);
  auto& turns = turns_;  // a member: no allocation per call on the hot path
  turns.resize(static_cast<std::size_t>(settings_.gpus));
  std::iota(turns.begin(), turns.end(), 0);
  for (bool took = true; took;) {
    took = false;
    std::stable_sort(turns.begin(), turns.end(), [this](int a, int b) {
      return progress_[static_cast<std::size_t>(a)] < progress_[static_cast<std::size_t>(b)];
    });
    for (int gpu : turns) {
      auto& credit = credits_[static_cast<std::size_t>(gpu)];
      if (credit == 0) {
        continue;
      }
      auto plan = policy_->take(gpu);
      if (!plan) {
        continue;
      }
      --credit;
      record_delivery(*plan);
      out.push_back(std::move(*plan));
      took = true;
    }
  }
  return out;
}

}  // namespace conveyor

#pragma once
/// A deterministic world around batcher_core for tests: no clocks, no threads. Samples complete
/// in a seeded random order, except "stragglers" (sample id % straggler_every == 5), which
/// complete only when nothing else can move; trainers of random GPUs take and release batches.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/batching/batcher_core.hpp"

namespace conveyor::testing {

struct world_params {
  std::uint64_t samples = 103;
  std::uint64_t batch = 8;
  int gpus = 1;
  int workers = 3;
  std::uint64_t epochs = 2;
  std::uint64_t prefetch = 2;
  std::uint64_t straggler_every = 13;  ///< sample ids id % n == 5 are stragglers (0: none)
  std::uint64_t fail_every = 0;        ///< every n-th sample id fails (0: none)
  /// Sample ids id % n == 1 are left out by the recipe's filter (errc::filtered; 0: none).
  std::uint64_t filter_every = 0;
  /// Every n-th completion, a random preprocessor dies with what it holds; the results of
  /// half of its attempts still arrive later (they must be ignored). 0: none.
  std::uint64_t kill_every = 0;
  std::uint32_t max_sample_retries = 2;
  bool balanced = false;  ///< latency_aware: equal batches per GPU
  /// Each prepared sample gets field 0: a uint8 array of length_of(sample id) elements, and
  /// the policy buckets by it.
  bucketing buckets{};
  std::uint64_t window = 0;  ///< samples in flight at most; 0: default_window
  sample_order order{};      ///< how each epoch's order is drawn
};

/// The length of sample `id`'s field 0 in a bucketed world: spread over 1 .. 400.
inline std::int64_t length_of(std::uint64_t id) {
  return static_cast<std::int64_t>((id * 7919) % 400 + 1);
}

struct world_result {
  std::vector<batch_plan> batches;
  epoch_summary totals;
  /// handed out while a straggler that comes before one of its samples was outstanding
  std::uint64_t batches_past_stragglers = 0;
  std::uint64_t peak_in_flight = 0;
  std::uint64_t window = 0;
  std::uint64_t kills = 0;
  std::uint64_t stale = 0;  ///< results of given-up attempts that were ignored
  /// Dispatches of a sample the filter had already left out (it should not be read again).
  std::uint64_t filtered_dispatched_again = 0;
  /// Per epoch, the samples take_read_ahead told (asked a window ahead at every exchange), in
  /// the order told; and first dispatches of a sample not told by the end of that exchange.
  std::map<std::uint64_t, std::vector<std::uint64_t>> told;
  /// Per epoch, how many of its samples were told after each take_read_ahead that told some.
  std::map<std::uint64_t, std::vector<std::uint64_t>> told_through;
  std::uint64_t dispatched_untold = 0;
};

class batcher_world {
 public:
  batcher_world(const world_params& p, batching_policy kind, std::uint64_t seed)
      : p_(p),
        core_(settings(p, kind, seed),
              make_batch_policy(kind, {p.batch, p.gpus, p.balanced, 0, p.buckets})),
        rng_(seed) {
    for (int g = 0; g < p.gpus; ++g) {
      core_.on_credit(g, p.prefetch + 1);
    }
    core_.on_worker_up(worker_role::reader, 0);
    for (int w = 0; w < p.workers; ++w) {
      core_.on_worker_up(worker_role::preprocessor, w);
    }
  }

  world_result run() {
    // Each sample is completed once and each batch trained once: far fewer steps than this.
    auto steps_left = 10 * p_.samples * p_.epochs;
    while (!core_.finished() || !at_feeders_.empty()) {
      exchange();
      if (steps_left-- == 0 || !step()) {
        ADD_FAILURE() << "stuck: nothing to complete and nothing to train on";
        break;
      }
    }
    result_.totals = core_.ledger().totals();
    result_.peak_in_flight = core_.peak_in_flight();
    result_.stale = core_.stale_results();
    result_.window = core_.settings().window_samples;
    return std::move(result_);
  }

 private:
  static batcher_settings settings(const world_params& p, batching_policy kind,
                                   std::uint64_t seed) {
    batcher_settings s;
    s.dataset_size = p.samples;
    s.seed = seed;  // the sampler's order, hence where the stragglers sit
    s.order = p.order;
    s.epochs = p.epochs;
    s.batch_size = p.batch;
    s.gpus = p.gpus;
    s.workers = p.workers;
    s.max_sample_retries = p.max_sample_retries;
    s.buckets = p.buckets;
    s.window_samples = p.window != 0 ? p.window : default_window(p.prefetch, kind, s);
    return s;
  }

  bool is_straggler(const dispatch_order& d) const {
    return p_.straggler_every != 0 && d.ticket.sample_id % p_.straggler_every == 5;
  }

  void exchange() {
    auto dispatches = core_.take_dispatches();
    auto ahead = core_.take_read_ahead(core_.settings().window_samples);
    for (auto id : ahead.ids) {
      result_.told[ahead.epoch].push_back(id);
      told_.insert({ahead.epoch, id});
    }
    if (!ahead.ids.empty()) {
      result_.told_through[ahead.epoch].push_back(result_.told[ahead.epoch].size());
    }
    for (auto& d : dispatches) {
      result_.dispatched_untold +=
          d.ticket.retry == 0 && told_.count({d.ticket.epoch, d.ticket.sample_id}) == 0;
      result_.filtered_dispatched_again += filtered_.count(d.ticket.sample_id);
      (is_straggler(d) ? slow_ : fast_).push_back(d);
    }
    for (auto& b : core_.take_batches()) {
      result_.batches_past_stragglers += passes_a_straggler(b) ? 1 : 0;
      at_feeders_.push_back(std::move(b));
    }
  }

  // The batch holds a sample that comes after an outstanding straggler in its epoch's order.
  bool passes_a_straggler(const batch_plan& b) const {
    return std::any_of(slow_.begin(), slow_.end(), [&](const dispatch_order& d) {
      return d.ticket.epoch == b.epoch &&
             std::any_of(b.samples.begin(), b.samples.end(),
                         [&](const prepared_ptr& s) { return s->ticket.seq > d.ticket.seq; });
    });
  }

  // Completes a fast sample or trains, at random; a straggler only when neither can be done.
  bool step() {
    if (p_.kill_every != 0 && ++completions_ % p_.kill_every == 0) {
      kill_a_worker();
      return true;  // its samples are issued again at the next exchange
    }
    if (!fast_.empty() && (at_feeders_.empty() || rng_() % 3 != 0)) {
      auto i = static_cast<long>(rng_() % fast_.size());
      complete(fast_[static_cast<std::size_t>(i)]);
      fast_.erase(fast_.begin() + i);
    } else if (!at_feeders_.empty()) {
      train();
    } else if (!slow_.empty()) {
      complete(slow_.front());
      slow_.erase(slow_.begin());
    } else {
      return false;
    }
    return true;
  }

  void complete(const dispatch_order& d) {
    if (p_.fail_every != 0 && d.ticket.sample_id % p_.fail_every == 0) {
      core_.on_failed(d.ticket, "broken");
      return;
    }
    if (p_.filter_every != 0 && d.ticket.sample_id % p_.filter_every == 1) {
      if (core_.on_filtered(d.ticket) == failure_outcome::filtered) {
        filtered_.insert(d.ticket.sample_id);
      }
      return;
    }
    auto sample = std::make_shared<prepared_sample>();
    sample->ticket = d.ticket;
    if (p_.buckets.enabled()) {
      sample->fields.push_back(host_array::zeros(dtype::uint8, {length_of(d.ticket.sample_id)}));
    }
    core_.on_prepared(std::move(sample));
  }

  // A random preprocessor dies, charged with one of its samples; half of the orders it held
  // are lost, the other half complete later anyway (a zombie's late results).
  void kill_a_worker() {
    int w = static_cast<int>(rng_() % static_cast<std::uint64_t>(p_.workers));
    std::uint64_t culprit = 0;
    for (auto* queue : {&fast_, &slow_}) {
      for (auto it = queue->begin(); it != queue->end();) {
        if (it->worker != w) {
          ++it;
          continue;
        }
        culprit = it->ticket.attempt;
        if (rng_() % 2 == 0) {
          ++it;  // a zombie: its result still arrives
        } else {
          it = queue->erase(it);
        }
      }
    }
    core_.on_worker_down(worker_role::preprocessor, w, culprit, "killed by the test");
    core_.on_worker_up(worker_role::preprocessor, w);
    ++result_.kills;
  }

  // The trainer of a random GPU that has a batch consumes its oldest one.
  void train() {
    auto gpu = at_feeders_[rng_() % at_feeders_.size()].gpu;
    auto it = std::find_if(at_feeders_.begin(), at_feeders_.end(),
                           [&](const batch_plan& b) { return b.gpu == gpu; });
    core_.on_released(it->samples.size());
    core_.on_credit(gpu, 1);
    result_.batches.push_back(std::move(*it));
    at_feeders_.erase(it);
  }

  world_params p_;
  batcher_core core_;
  std::mt19937_64 rng_;
  std::uint64_t completions_ = 0;
  std::vector<dispatch_order> fast_;
  std::vector<dispatch_order> slow_;
  std::vector<batch_plan> at_feeders_;
  std::set<std::uint64_t> filtered_;                        ///< ids the filter left out so far
  std::set<std::pair<std::uint64_t, std::uint64_t>> told_;  ///< (epoch, id) read ahead
  world_result result_;
};

}  // namespace conveyor::testing

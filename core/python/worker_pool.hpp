#pragma once
/// The Python worker processes of one pipeline: at most `capacity` of them live (its
/// preprocessors plus its straggler actors, so that an actor that hands a sample off with its
/// worker still finds one for the next), each forked from the pool's zygote (worker_zygote.hpp,
/// started with the first worker and again if it dies) the first time an actor needs one and
/// kept between samples. An actor takes a worker for a sample as a lease; the lease moves with
/// the sample (a hand-off) and gives the worker back when it ends. A worker that died, was
/// killed or broke the protocol is not given back: its place (and its worker id, which
/// worker_init_fn sees again) goes to the next one started. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/metrics/latency_tracker.hpp"
#include "core/metrics/rate_meter.hpp"
#include "core/python/worker_process.hpp"
#include "core/python/worker_zygote.hpp"
#include "core/transforms/external_step.hpp"

namespace conveyor {

class worker_pool;

/// One worker, taken from its pool for a sample. Move-only; gives the worker back (or, if it
/// is gone, its place) when destroyed.
class worker_lease {
 public:
  worker_lease(std::shared_ptr<worker_pool> pool, worker_process worker) noexcept;
  worker_lease(worker_lease&&) noexcept = default;
  worker_lease& operator=(worker_lease&&) noexcept = default;
  worker_lease(const worker_lease&) = delete;
  worker_lease& operator=(const worker_lease&) = delete;
  ~worker_lease();

  worker_process& operator*() noexcept { return *worker_; }
  worker_process* operator->() noexcept { return &*worker_; }

  /// The worker was asked for a sample (it is in flight until answered() or the lease ends).
  void asked() noexcept;
  /// It answered (a sample or an exception): its time goes to the pool's figures.
  void answered() noexcept;

 private:
  std::shared_ptr<worker_pool> pool_;
  std::optional<worker_process> worker_;
  std::chrono::steady_clock::time_point asked_at_{};
};

class worker_pool : public std::enable_shared_from_this<worker_pool> {
 public:
  /// Precondition: capacity > 0. `zygote`: one already started (worker_zygote::adopt), or null
  /// for one started with the first worker.
  static std::shared_ptr<worker_pool> make(worker_launch launch, std::size_t capacity,
                                           std::shared_ptr<worker_zygote> zygote = nullptr);
  /// Stops the idle workers (a leased one holds the pool until its lease ends).
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  /// An idle worker, or a new one forked now (its start bounded by launch.start_timeout) when
  /// none is idle and fewer than `capacity` live; when all `capacity` are leased (samples
  /// handed off wait for a straggler actor with their workers), waits for one to come back, at
  /// most launch.start_timeout. Errors: worker_zygote::start's and fork_worker's (a start that
  /// failed frees its place; a zygote found dead is started again once); errc::timed_out when
  /// no worker came back in time.
  expected<worker_lease> take();

  /// Starts the zygote and every place's worker now (the zygote's start takes seconds: an
  /// interpreter, imports, the dataset), so that none starts while samples wait. The first
  /// failure's error.
  expected<void> start_all();

  /// Workers started so far, the first `capacity` included (a replacement is a restart).
  std::uint64_t started() const;
  /// Workers that may live at once.
  std::size_t capacity() const noexcept { return capacity_; }
  /// The zygote's pid (-1 before the first worker starts).
  pid_t zygote_pid() const;
  /// Each place's worker as the monitor shows an actor ("python-worker-<id>": its pid, whether
  /// a sample is in flight, samples answered, their rate and time), in id order.
  std::vector<external_process_figures> figures() const;
  /// Workers that live now (idle or leased).
  std::size_t live() const;

 private:
  friend class worker_lease;
  worker_pool(worker_launch launch, std::size_t capacity, std::shared_ptr<worker_zygote> zygote);
  void give_back(worker_process w) noexcept;
  /// What the pool knows of one place (its id's), for figures().
  struct place {
    pid_t pid = -1;
    bool in_flight = false;
    latency_tracker latency;
    rate_meter rate;
  };
  /// A worker forked for place `id` (from a new zygote when the pool's has died).
  expected<worker_process> start_worker(std::uint32_t id);
  /// The pool's zygote, started now when there is none or it has died.
  expected<std::shared_ptr<worker_zygote>> zygote();

  const worker_launch launch_;
  const std::size_t capacity_;
  mutable std::mutex zygote_mutex_;
  std::shared_ptr<worker_zygote> zygote_;  ///< destroyed after the idle workers it reaps
  mutable std::mutex mutex_;
  std::condition_variable returned_;  ///< a worker came back, or a place was freed
  std::vector<worker_process> idle_;
  std::vector<std::uint32_t> free_ids_;  ///< the ids of places no worker holds
  mutable std::vector<place> places_;    ///< by worker id (figures() reads their snapshots)
  std::uint64_t started_ = 0;
};

}  // namespace conveyor

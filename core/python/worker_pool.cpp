#include "core/python/worker_pool.hpp"

#include <optional>
#include <thread>
#include <utility>

namespace conveyor {

worker_lease::worker_lease(std::shared_ptr<worker_pool> pool, worker_process worker) noexcept
    : pool_(std::move(pool)), worker_(std::move(worker)) {}

worker_lease::~worker_lease() {
  if (pool_ && worker_) {
    pool_->give_back(std::move(*worker_));
  }
}

void worker_lease::asked() noexcept {
  asked_at_ = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  pool_->places_[worker_->id()].in_flight = true;
}

void worker_lease::answered() noexcept {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  auto& p = pool_->places_[worker_->id()];
  p.in_flight = false;
  p.latency.record(std::chrono::duration_cast<std::chrono::nanoseconds>(now - asked_at_).count());
  p.rate.add(now);
}

std::shared_ptr<worker_pool> worker_pool::make(worker_launch launch, std::size_t capacity,
                                               std::shared_ptr<worker_zygote> zygote) {
  return std::shared_ptr<worker_pool>(
      new worker_pool(std::move(launch), capacity, std::move(zygote)));
}

worker_pool::worker_pool(worker_launch launch, std::size_t capacity,
                         std::shared_ptr<worker_zygote> zygote)
    : launch_(std::move(launch)), capacity_(capacity), zygote_(std::move(zygote)) {
  idle_.reserve(capacity);  // give_back never allocates
  places_.resize(capacity);
  for (std::size_t i = capacity; i > 0; --i) {
    free_ids_.push_back(static_cast<std::uint32_t>(i - 1));  // the lowest id first
  }
}

expected<worker_lease> worker_pool::take() {
  std::uint32_t id = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool some = returned_.wait_for(lock, launch_.start_timeout,
                                         [&] { return !idle_.empty() || !free_ids_.empty(); });
    if (!some) {
      return error{errc::timed_out, "all " + std::to_string(capacity_) +
                                        " Python workers stayed taken for " +
                                        std::to_string(launch_.start_timeout.count()) + " ms"};
    }
    if (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      return worker_lease(shared_from_this(), std::move(w));
    }
    id = free_ids_.back();
    free_ids_.pop_back();
    ++started_;
    places_[id].pid = -1;
  }
  // Started outside the lock: a zygote's start takes seconds (an interpreter, imports, the
  // dataset), and worker_init_fn may take its time.
  auto w = start_worker(id);
  if (!w) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_ids_.push_back(id);
    returned_.notify_one();
    return w.error();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    places_[id].pid = w->pid();
  }
  return worker_lease(shared_from_this(), std::move(*w));
}

expected<worker_process> worker_pool::start_worker(std::uint32_t id) {
  auto z = zygote();
  if (!z) {
    return z.error();
  }
  auto w = (*z)->fork_worker(id);
  if (!w && !(*z)->alive()) {  // the zygote died: once more, from a new one
    z = zygote();
    if (!z) {
      return z.error();
    }
    w = (*z)->fork_worker(id);
  }
  return w;
}

expected<std::shared_ptr<worker_zygote>> worker_pool::zygote() {
  std::lock_guard<std::mutex> lock(zygote_mutex_);
  if (!zygote_ || !zygote_->alive()) {
    zygote_.reset();
    auto z = worker_zygote::start(launch_);
    if (!z) {
      return z.error();
    }
    zygote_ = std::move(*z);
  }
  return zygote_;
}

pid_t worker_pool::zygote_pid() const {
  std::lock_guard<std::mutex> lock(zygote_mutex_);
  return zygote_ ? zygote_->pid() : -1;
}

expected<void> worker_pool::start_all() {
  std::vector<std::optional<expected<worker_lease>>> taken(capacity_);
  std::vector<std::thread> starts;
  for (std::size_t i = 0; i < capacity_; ++i) {
    starts.emplace_back([this, &taken, i] { taken[i].emplace(take()); });
  }
  for (auto& t : starts) {
    t.join();
  }
  for (auto& t : taken) {
    if (!*t) {
      return t->error();
    }
  }
  return {};  // the leases end here: every worker goes back to the pool, idle
}

void worker_pool::give_back(worker_process w) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  places_[w.id()].in_flight = false;
  if (w.alive()) {
    idle_.push_back(std::move(w));
  } else {
    places_[w.id()].pid = -1;
    free_ids_.push_back(w.id());
  }
  returned_.notify_one();
}

std::vector<external_process_figures> worker_pool::figures() const {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<external_process_figures> out;
  for (std::size_t id = 0; id < places_.size(); ++id) {
    auto& p = places_[id];
    const auto times = p.latency.snapshot();
    external_process_figures f;
    f.name = "python-worker-" + std::to_string(id);
    f.pid = p.pid;
    f.in_flight = p.in_flight;
    f.items = p.rate.total();
    f.items_per_s = static_cast<std::uint64_t>(p.rate.rate(now));
    f.p50_us = times.p50 / 1000;
    f.p90_us = times.p90 / 1000;
    f.p99_us = times.p99 / 1000;
    out.push_back(std::move(f));
  }
  return out;
}

worker_pool::~worker_pool() {
  for (auto& w : idle_) {
    w.request_stop();  // all at once: each then exits while the others are reaped
  }
}

std::uint64_t worker_pool::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return started_;
}

std::size_t worker_pool::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - free_ids_.size();
}

}  // namespace conveyor

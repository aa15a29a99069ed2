#include "core/serving/feed_hub.hpp"

#include <algorithm>
#include <string>

namespace conveyor {

feed_hub::feed_hub(int jobs, int ranks, std::uint64_t epochs, std::uint64_t first_epoch)
    : jobs_(jobs), epochs_(epochs), feeds_(static_cast<std::size_t>(ranks)) {
  for (auto& f : feeds_) {
    f.epochs_published = first_epoch;
    f.clients.resize(static_cast<std::size_t>(jobs));
    f.ended.assign(static_cast<std::size_t>(jobs), false);
  }
  released_.assign(static_cast<std::size_t>(jobs), 0);
}

std::optional<error> feed_hub::check(int job, int rank) const {
  if (job < 0 || job >= jobs_) {
    return error{errc::invalid_argument, "job " + std::to_string(job) + " is not one of the " +
                                             std::to_string(jobs_) +
                                             " jobs this node serves (serve.jobs)"};
  }
  if (rank < 0 || static_cast<std::size_t>(rank) >= feeds_.size()) {
    return error{errc::invalid_argument, "rank " + std::to_string(rank) + " is not one of the " +
                                             std::to_string(feeds_.size()) +
                                             " ranks this node serves (gpus)"};
  }
  return std::nullopt;
}

std::uint64_t feed_hub::start_epoch_locked(int job, const rank_feed& feed) const {
  for (const auto& e : feed.entries) {
    if (e.jobs[static_cast<std::size_t>(job)] != held::released) {
      return e.batch.epoch;
    }
  }
  return std::min(feed.epochs_published, epochs_);
}

expected<void> feed_hub::attach(int job, int rank, sender send, const welcomer& welcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto bad = check(job, rank)) {
    return *bad;
  }
  auto& feed = feeds_[static_cast<std::size_t>(rank)];
  auto j = static_cast<std::size_t>(job);
  if (feed.clients[j]) {
    return error{errc::invalid_argument, "a client is attached as rank " + std::to_string(rank) +
                                             " of job " + std::to_string(job) +
                                             " already (one process per rank and job)"};
  }
  welcome(start_epoch_locked(job, feed));
  if (failure_) {
    send(serve::failure{failure_->code(), failure_->message()});
    return {};
  }
  feed.clients[j] = std::move(send);
  feed.ended[j] = false;
  flush_locked(job, feed);
  return {};
}

std::size_t feed_hub::detach(int job, int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (check(job, rank)) {
    return 0;
  }
  std::size_t kept = 0;
  auto& feed = feeds_[static_cast<std::size_t>(rank)];
  auto j = static_cast<std::size_t>(job);
  feed.clients[j] = nullptr;
  for (auto& e : feed.entries) {
    if (e.jobs[j] == held::sent) {
      e.jobs[j] = held::pending;  // for the next client of (job, rank)
      ++kept;
    }
  }
  return kept;
}

void feed_hub::flush_locked(int job, rank_feed& feed) {
  auto j = static_cast<std::size_t>(job);
  const auto& send = feed.clients[j];
  if (!send) {
    return;
  }
  for (auto& e : feed.entries) {
    if (e.jobs[j] == held::pending) {
      e.jobs[j] = held::sent;
      send(e.batch);
    }
  }
  if (feed.finished && !feed.ended[j]) {
    feed.ended[j] = true;
    send(serve::end{});
  }
}

void feed_hub::publish(int rank, const serve::batch_ready& b) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& feed = feeds_[static_cast<std::size_t>(rank)];
  feed.entries.push_back({b, std::vector<held>(static_cast<std::size_t>(jobs_), held::pending)});
  feed.epochs_published += b.last_in_epoch ? 1 : 0;
  for (int job = 0; job < jobs_; ++job) {
    flush_locked(job, feed);
  }
}

expected<bool> feed_hub::release(int job, int rank, std::uint32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto bad = check(job, rank)) {
    return *bad;
  }
  auto& feed = feeds_[static_cast<std::size_t>(rank)];
  auto j = static_cast<std::size_t>(job);
  auto it = std::find_if(feed.entries.begin(), feed.entries.end(), [&](const entry& e) {
    return e.batch.slot == slot && e.jobs[j] == held::sent;
  });
  if (it == feed.entries.end()) {
    return error{errc::invalid_argument, "release of slot " + std::to_string(slot) +
                                             ", which rank " + std::to_string(rank) + " of job " +
                                             std::to_string(job) + " does not hold"};
  }
  it->jobs[j] = held::released;
  released_[j] += it->batch.samples;
  bool free =
      std::all_of(it->jobs.begin(), it->jobs.end(), [](held h) { return h == held::released; });
  if (free) {
    feed.entries.erase(it);
  }
  return free;
}

void feed_hub::finish(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& feed = feeds_[static_cast<std::size_t>(rank)];
  feed.finished = true;
  for (int job = 0; job < jobs_; ++job) {
    flush_locked(job, feed);
  }
}

void feed_hub::fail(const error& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_) {
    return;
  }
  failure_ = e;
  for (auto& feed : feeds_) {
    for (auto& client : feed.clients) {
      if (client) {
        client(serve::failure{e.code(), e.message()});
      }
    }
  }
}

bool feed_hub::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::all_of(feeds_.begin(), feeds_.end(),
                     [](const rank_feed& f) { return f.finished && f.entries.empty(); });
}

std::vector<std::uint64_t> feed_hub::released_samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return released_;
}

}  // namespace conveyor

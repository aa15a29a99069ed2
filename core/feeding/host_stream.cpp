#include "core/feeding/host_stream.hpp"

namespace conveyor {

std::uint64_t host_event_state::arm() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++armed_;
}

std::uint64_t host_event_state::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return armed_;
}

void host_event_state::complete(std::uint64_t record) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = std::max(completed_, record);
  }
  changed_.notify_all();
}

void host_event_state::fail(std::uint64_t record, const error& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_from_ == 0 || record < failed_from_) {
      failed_from_ = record;
      failure_ = why;
    }
  }
  changed_.notify_all();
}

expected<bool> host_event_state::done_locked(std::uint64_t record) const {
  if (completed_ >= record) {
    return true;
  }
  if (failed_from_ != 0 && record >= failed_from_) {
    return *failure_;
  }
  return false;
}

expected<bool> host_event_state::done(std::uint64_t record) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_locked(record);
}

expected<bool> host_event_state::wait_until(std::uint64_t record,
                                            clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto state = done_locked(record);
    if (!state || *state) {
      return state;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return done_locked(record);
    }
  }
}

host_stream::host_stream(std::string name, mode m) : name_(std::move(name)) {
  if (m == mode::threaded) {
    thread_ = std::thread([this] { loop(); });
  }
}

host_stream::~host_stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborting_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  // Records that never ran fail, so that nobody waits for them.
  error aborted{errc::device_error, name_ + ": destroyed before its work ran"};
  for (auto& it : queue_) {
    if (it.event) {
      it.event->fail(it.record, aborted);
    }
  }
}

void host_stream::enqueue(stream_work work) {
  push({std::move(work), nullptr, 0});
}

void host_stream::enqueue_record(std::shared_ptr<host_event_state> event, std::uint64_t record) {
  push({nullptr, std::move(event), record});
}

void host_stream::enqueue_wait(std::shared_ptr<host_event_state> event, std::uint64_t record) {
  enqueue([this, event = std::move(event), record]() -> expected<void> {
    for (;;) {
      auto state =
          event->wait_until(record, host_event_state::clock::now() + std::chrono::milliseconds(20));
      if (!state) {
        return std::move(state).error();
      }
      if (*state) {
        return {};
      }
      if (!pause(std::chrono::nanoseconds(0))) {
        return error{errc::device_error, name_ + ": destroyed while waiting for an event"};
      }
    }
  });
}

std::optional<error> host_stream::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

bool host_stream::pause(std::optional<std::chrono::nanoseconds> duration) const {
  std::unique_lock<std::mutex> lock(mutex_);
  auto aborted = [this] { return aborting_; };
  if (duration) {
    return !changed_.wait_for(lock, *duration, aborted);
  }
  changed_.wait(lock, aborted);
  return false;
}

void host_stream::push(item it) {
  if (!thread_.joinable()) {
    run(it);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(it));
  }
  changed_.notify_all();
}

// Runs one item: its work, or the completion of its record (a failure if the stream failed).
void host_stream::run(item& it) {
  auto failed = failure();
  if (it.event) {
    if (failed) {
      it.event->fail(it.record, *failed);
    } else {
      it.event->complete(it.record);
    }
    return;
  }
  if (failed) {
    return;
  }
  if (auto ok = it.work(); !ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = ok.error();
  }
}

void host_stream::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return aborting_ || !queue_.empty(); });
    if (aborting_) {
      return;
    }
    auto it = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run(it);
    lock.lock();
  }
}

}  // namespace conveyor

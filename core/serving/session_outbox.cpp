#include "core/serving/session_outbox.hpp"

#include "core/serving/fd_passing.hpp"

namespace conveyor {

session_outbox::session_outbox(int socket, std::size_t limit, std::function<void()> wake)
    : socket_(socket), limit_(limit), wake_(std::move(wake)) {}

void session_outbox::drain_locked() {
  while (!waiting_.empty() && !broken_) {
    const auto& front = waiting_.front();
    auto sent = send_message(socket_, front.bytes.data(), front.bytes.size(), front.fd,
                             /*wait=*/false);
    if (!sent) {
      broken_ = sent.error().code() != errc::resource_exhausted;
      return;  // full (flush() again when it has room), or gone
    }
    waiting_.pop_front();
  }
}

bool session_outbox::push(const serve::message& m, int fd) {
  bool wake = false;
  bool ok = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (overflowed_ || broken_) {
      return false;
    }
    if (waiting_.size() >= limit_) {
      overflowed_ = true;
      wake = true;
    } else {
      const bool was_empty = waiting_.empty();
      waiting_.push_back({serve::encode(m), fd});
      drain_locked();
      wake = broken_ || (was_empty && !waiting_.empty());
    }
    ok = !overflowed_ && !broken_;
  }
  if (wake) {
    wake_();
  }
  return ok;
}

bool session_outbox::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  drain_locked();
  return !broken_;
}

bool session_outbox::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !waiting_.empty();
}

bool session_outbox::overflowed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overflowed_;
}

bool session_outbox::broken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return broken_;
}

void session_outbox::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  broken_ = true;
  waiting_.clear();
}

}  // namespace conveyor

#include "core/python/worker_process.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/base/little_endian.hpp"
#include "core/python/child_process.hpp"

namespace conveyor {

namespace {

// How long a worker that broke off is given to end by itself, so that its own exit code or
// signal is what is reported.
constexpr std::chrono::milliseconds ending_grace(500);
// How long its zygote may take to write an ended worker's status.
constexpr std::chrono::milliseconds status_bound(std::chrono::seconds(5));

// The wait status the zygote wrote on `status` (4 bytes, little-endian), as ending_of names it.
std::string status_from(int status) {
  if (!readable_within(status, status_bound)) {
    return "ended (its zygote gave no status within " + std::to_string(status_bound.count()) +
           " ms)";
  }
  std::uint8_t bytes[4] = {};
  ssize_t n = 0;
  do {
    n = ::read(status, bytes, sizeof bytes);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof bytes)) {
    return "ended (its status was lost with its zygote)";
  }
  return ending_of(static_cast<int>(little_endian::load<std::uint32_t>(bytes)));
}

}  // namespace

worker_process::worker_process(forked_process forked, unique_fd socket, std::uint32_t id,
                               std::chrono::milliseconds stop_grace) noexcept
    : pid_(forked.pid),
      process_(std::move(forked.process)),
      status_(std::move(forked.status)),
      socket_(std::move(socket)),
      id_(id),
      stop_grace_(stop_grace) {}

worker_process::worker_process(worker_process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      process_(std::move(o.process_)),
      status_(std::move(o.status_)),
      socket_(std::move(o.socket_)),
      inbox_(std::move(o.inbox_)),
      inbox_bytes_(std::exchange(o.inbox_bytes_, 0)),
      id_(o.id_),
      stop_grace_(o.stop_grace_) {}

worker_process& worker_process::operator=(worker_process&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = std::exchange(o.pid_, -1);
    process_ = std::move(o.process_);
    status_ = std::move(o.status_);
    socket_ = std::move(o.socket_);
    inbox_ = std::move(o.inbox_);
    inbox_bytes_ = std::exchange(o.inbox_bytes_, 0);
    id_ = o.id_;
    stop_grace_ = o.stop_grace_;
  }
  return *this;
}

worker_process::~worker_process() {
  stop();
}

expected<void> worker_process::await_ready(std::chrono::milliseconds timeout) {
  if (auto why = not_ready(socket(), timeout); !why.empty()) {
    return failed(why, ending_grace);
  }
  return {};
}

expected<void> worker_process::ask(std::uint64_t epoch, std::uint64_t index, std::uint64_t seed) {
  return send(sample_message(epoch, index, seed), -1);
}

expected<void> worker_process::ask_step(const std::vector<std::uint8_t>& message, int fields) {
  return send(message, fields);
}

expected<void> worker_process::send(const std::vector<std::uint8_t>& message, int fd) {
  if (!alive()) {
    return error{errc::worker_failed, named() + " is gone"};
  }
  if (auto sent = send_message(socket(), message.data(), message.size(), fd); !sent) {
    return failed("it took no sample (" + sent.error().message() + ")", ending_grace);
  }
  return {};
}

expected<int> worker_process::inbox(std::uint64_t bytes) {
  if (!inbox_) {
    inbox_ = unique_fd(::memfd_create("conveyor-step-fields", MFD_CLOEXEC));
    if (!inbox_) {
      return error{errc::io_error, std::string("memfd_create: ") + std::strerror(errno)};
    }
  }
  if (bytes > inbox_bytes_) {
    if (::ftruncate(inbox_.get(), static_cast<off_t>(bytes)) != 0) {
      return error{errc::io_error,
                   std::string("growing a worker's inbox: ") + std::strerror(errno)};
    }
    inbox_bytes_ = bytes;
  }
  return inbox_.get();
}

expected<worker_sample> worker_process::await(std::chrono::milliseconds timeout) {
  if (!alive()) {
    return error{errc::worker_failed, named() + " is gone"};
  }
  auto got = receive_message(socket(), max_worker_message, timeout);
  if (!got) {
    if (got.error().code() == errc::timed_out) {
      return got.error();
    }
    return failed("it answered nothing", ending_grace);
  }
  auto reply = decode_reply(std::move(*got));
  if (!reply) {
    return failed(reply.error().message(), std::chrono::milliseconds(0));
  }
  if (reply->kind == reply_kind::raised) {
    return error{errc::transform_error, "dataset[" + std::to_string(reply->exception.index) +
                                            "] raised " + reply->exception.what()};
  }
  if (reply->kind != reply_kind::done) {
    return failed("it sent a reply of another kind in answer to a sample",
                  std::chrono::milliseconds(0));
  }
  return std::move(reply->sample);
}

void worker_process::kill() noexcept {
  if (alive()) {
    (void)reap(std::chrono::milliseconds(0));
  }
}

std::string worker_process::reap(std::chrono::milliseconds grace) noexcept {
  (void)end_by_pidfd(process_.get(), grace);
  const auto ending = status_from(status_.get());
  pid_ = -1;
  socket_.reset();
  process_.reset();
  status_.reset();
  return ending;
}

error worker_process::failed(const std::string& why, std::chrono::milliseconds grace) {
  const auto who = named();
  const auto ending = alive() ? reap(grace) : std::string("is gone");
  return error{errc::worker_failed, who + ": " + why + "; it " + ending};
}

std::string worker_process::named() const {
  return "Python worker " + std::to_string(id_) + " (pid " + std::to_string(pid_) + ")";
}

void worker_process::request_stop() noexcept {
  if (alive()) {
    const auto bye = stop_message();
    (void)send_message(socket(), bye.data(), bye.size(), -1, false);
  }
}

void worker_process::stop() noexcept {
  if (alive()) {
    request_stop();
    (void)reap(stop_grace_);
  }
}

}  // namespace conveyor

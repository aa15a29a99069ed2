#include "core/python/worker_zygote.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/base/memory_bound.hpp"
#include "core/python/child_process.hpp"
#include "core/serving/shared_region.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

namespace {

// The setup in a region sealed for this process's writes: launch.setup copied in, or
// launch.setup_file (at most the machine's memory) read straight into it, so that this
// process never holds a second copy of a large pickled dataset.
expected<shared_region> setup_region(const worker_launch& launch) {
  const bool in_memory = launch.setup && !launch.setup->empty();
  std::shared_ptr<const byte_source> file;
  if (!in_memory) {
    auto opened = open_file_source(launch.setup_file);
    if (!opened) {
      return opened.error();
    }
    file = std::move(*opened);
  }
  const std::uint64_t size = in_memory ? launch.setup->size() : file->size();
  if (size == 0 || size > machine_memory_bytes()) {
    return error{errc::invalid_argument, launch.setup_file + ": " + std::to_string(size) +
                                             " bytes, no setup a zygote can hold"};
  }
  auto region = shared_region::create("conveyor-worker-setup", static_cast<std::size_t>(size),
                                      shared_region::writers::creator_only);
  if (!region) {
    return region.error();
  }
  if (in_memory) {
    std::memcpy(region->data(), launch.setup->data(), launch.setup->size());
  } else if (auto read = file->read_at(0, region->data(), region->size()); !read) {
    return read.error();
  }
  return region;
}

// How long the zygote may take to answer a fork (a fork takes milliseconds).
constexpr std::chrono::milliseconds fork_bound(std::chrono::seconds(30));
// How long a zygote that broke off is given to end by itself.
constexpr std::chrono::milliseconds ending_grace(500);

expected<std::pair<unique_fd, unique_fd>> socket_pair() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return error{errc::io_error, std::string("socketpair: ") + std::strerror(errno)};
  }
  return std::make_pair(unique_fd(pair[0]), unique_fd(pair[1]));
}

}  // namespace

worker_zygote::worker_zygote(const worker_launch& launch, pid_t pid, unique_fd process,
                             unique_fd socket, bool child)
    : launch_(launch),
      pid_(pid),
      process_(std::move(process)),
      socket_(std::move(socket)),
      child_(child) {}

expected<std::shared_ptr<worker_zygote>> worker_zygote::start(const worker_launch& launch) {
  if ((!launch.setup || launch.setup->empty()) && launch.setup_file.empty()) {
    return error{errc::invalid_argument, "a Python worker needs its setup (the pickled dataset)"};
  }
  auto pair = socket_pair();
  if (!pair) {
    return pair.error();
  }
  auto pid = spawn_python(launch.python, launch.script, pair->second.get());
  if (!pid) {
    return pid.error();
  }
  pair->second.reset();
  auto process = open_pidfd(*pid);
  std::shared_ptr<worker_zygote> z(new worker_zygote(
      launch, *pid, process ? std::move(*process) : unique_fd(), std::move(pair->first), true));
  if (!process) {
    return z->failed(process.error().message());
  }
  if (auto sent = z->send_setup(); !sent) {
    return sent.error();
  }
  if (auto ready = z->await_ready(); !ready) {
    return ready.error();
  }
  return z;
}

expected<std::shared_ptr<worker_zygote>> worker_zygote::adopt(const worker_launch& launch,
                                                              unique_fd socket, unique_fd process) {
  int type = 0;
  socklen_t size = sizeof type;
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_TYPE, &type, &size) != 0 ||
      type != SOCK_SEQPACKET) {
    return error{errc::invalid_config, "python.zygote_socket: descriptor " +
                                           std::to_string(socket.get()) +
                                           " is not a SOCK_SEQPACKET socket"};
  }
  const auto pid = pid_of_pidfd(process.get());
  if (pid <= 0) {
    return error{errc::invalid_config, "python.zygote_pidfd: descriptor " +
                                           std::to_string(process.get()) +
                                           " is not a pidfd of a live process"};
  }
  std::shared_ptr<worker_zygote> z(
      new worker_zygote(launch, pid, std::move(process), std::move(socket), false));
  if (auto ready = z->await_ready(); !ready) {
    return ready.error();
  }
  return z;
}

expected<void> worker_zygote::send_setup() {
  auto setup = setup_region(launch_);
  if (!setup) {
    return failed("its setup: " + setup.error().message());
  }
  const auto hello = start_message(setup->size());
  if (auto sent = send_message(socket_.get(), hello.data(), hello.size(), setup->fd()); !sent) {
    return failed("it took no start message (" + sent.error().message() + ")");
  }
  return {};
}

expected<void> worker_zygote::await_ready() {
  if (auto why = not_ready(socket_.get(), launch_.start_timeout); !why.empty()) {
    return failed(why);
  }
  return {};
}

expected<worker_process> worker_zygote::fork_worker(std::uint32_t worker_id) {
  auto pair = socket_pair();
  if (!pair) {
    return pair.error();
  }
  auto forked = fork_process(worker_id, pair->second.get());
  if (!forked) {
    return forked.error();
  }
  pair->second.reset();
  worker_process w(std::move(*forked), std::move(pair->first), worker_id, launch_.stop_grace);
  if (auto ready = w.await_ready(launch_.start_timeout); !ready) {
    return ready.error();
  }
  return w;
}

expected<forked_process> worker_zygote::fork_process(std::uint32_t worker_id, int worker_socket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reaped_) {
    return error{errc::worker_failed, "the Python workers' zygote (pid " + std::to_string(pid_) +
                                          ") is gone: no worker can be forked"};
  }
  const auto ask = fork_message(worker_id);
  if (auto sent = send_message(socket_.get(), ask.data(), ask.size(), worker_socket); !sent) {
    return failed("it took no fork request for worker " + std::to_string(worker_id) + " (" +
                  sent.error().message() + ")");
  }
  auto got = receive_message(socket_.get(), max_worker_message, fork_bound);
  if (!got) {
    return failed("it did not fork worker " + std::to_string(worker_id) + " (" +
                  got.error().message() + ")");
  }
  auto reply = decode_reply(std::move(*got));
  if (reply && reply->kind == reply_kind::failed) {  // fork() raised: the zygote lives on
    return error{errc::worker_failed, "the Python workers' zygote (pid " + std::to_string(pid_) +
                                          ") could not fork worker " + std::to_string(worker_id) +
                                          ": " + reply->exception.what()};
  }
  if (!reply || reply->kind != reply_kind::forked) {
    return failed("it did not fork worker " + std::to_string(worker_id) + " (" +
                  (reply ? "a reply of another kind" : reply.error().message()) + ")");
  }
  return std::move(reply->forked);
}

std::string worker_zygote::end(std::chrono::milliseconds grace) noexcept {
  if (reaped_.exchange(true)) {
    return "is gone";
  }
  if (child_) {
    return reap_child(pid_, process_.get(), grace);
  }
  return end_by_pidfd(process_.get(), grace) ? "ended" : "did not end when killed";
}

error worker_zygote::failed(const std::string& why) {
  const auto ending = end(ending_grace);
  return error{errc::worker_failed, "the Python workers' zygote (pid " + std::to_string(pid_) +
                                        "): " + why + "; it " + ending};
}

bool worker_zygote::alive() const noexcept {
  return !reaped_ && process_ && !readable_within(process_.get(), std::chrono::milliseconds(0));
}

worker_zygote::~worker_zygote() {
  if (!reaped_) {
    const auto bye = stop_message();
    (void)send_message(socket_.get(), bye.data(), bye.size(), -1, false);
    (void)end(launch_.stop_grace);
  }
}

}  // namespace conveyor

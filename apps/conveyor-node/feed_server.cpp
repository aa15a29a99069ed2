#include "apps/conveyor-node/feed_server.hpp"

#include <poll.h>

#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

#include "core/base/log.hpp"
#include "core/serving/feed_hub.hpp"
#include "core/serving/serve_socket.hpp"
#include "core/serving/unix_socket.hpp"

namespace conveyor {
namespace {

constexpr auto poll_slice = std::chrono::milliseconds(100);
// A client that does not take a message within this long is treated as gone.
constexpr auto send_timeout = std::chrono::milliseconds(10000);

struct session {
  unique_fd fd;
  peer_identity peer;
  int job = -1;
  int rank = -1;
  bool attached() const { return job >= 0; }
};

bool send(int fd, const serve::message& m, int region_fd = -1) {
  return static_cast<bool>(send_serve(fd, m, region_fd));
}

serve::node_report node_report_of(const pipeline_report& r) {
  return {r.delivered, r.quarantined, r.duplicates, r.lost,    r.steps_executed,
          r.retries,   r.restarts,    r.handoffs,   r.finished};
}

class server {
 public:
  server(const serve_config& c, pipeline& p, const served_feeds& f, unique_fd l, stop_token& s)
      : config_(c),
        pipeline_(p),
        feeds_(f),
        listener_(std::move(l)),
        stop_(s),
        hub_(c.jobs, f.ranks(), p.epochs()),
        held_(static_cast<std::size_t>(f.ranks())) {
    for (auto& slots : held_) {
      slots.resize(f.slots());
    }
  }

  serve_outcome run();

 private:
  void pull(int rank);
  void publish(int rank, batch b);
  bool wait_for_free_slot();
  void accept_clients(std::list<session>& sessions);
  /// Reads one message of `s`; false when the session ends.
  bool on_readable(session& s);
  bool on_attach(session& s, const serve::attach& a);
  bool on_release(session& s, std::uint32_t slot);
  bool refuse(session& s, const error& why);
  void drop(session& s);
  serve::attached welcome_of(int rank, std::uint64_t start_epoch) const;

  const serve_config& config_;
  pipeline& pipeline_;
  const served_feeds& feeds_;
  unique_fd listener_;
  stop_token& stop_;
  feed_hub hub_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::vector<batch>> held_;  ///< [rank][slot]: published, not yet free
  bool failed_ = false;                   // under mutex_
  serve_outcome outcome_;
};

void server::pull(int rank) {
  while (!stop_.requested()) {
    auto b = pipeline_.next(rank);
    if (b) {
      publish(rank, std::move(*b));
      continue;
    }
    switch (b.error().code()) {
      case errc::resource_exhausted:  // every slot is out with the clients
        if (!wait_for_free_slot()) {
          return;
        }
        continue;
      case errc::timed_out:  // the ranks advance together: another rank's clients lag
        continue;
      case errc::not_found:
        hub_.finish(rank);
        return;
      default: {
        log("serve")->error("rank {}: {}", rank, b.error().what());
        hub_.fail(b.error());
        std::lock_guard<std::mutex> lock(mutex_);
        failed_ = true;
        return;
      }
    }
  }
}

bool server::wait_for_free_slot() {
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait_for(lock, poll_slice);
  return !failed_;
}

void server::publish(int rank, batch b) {
  auto slot = feeds_.slot_of(rank, b);
  if (slot < 0) {
    hub_.fail(error{errc::invalid_argument, "a batch outside the shared slots (bug)"});
    return;
  }
  auto s = static_cast<std::uint32_t>(slot);
  feeds_.describe(rank, s, b);
  serve::batch_ready ready{s, b.epoch(), b.index(), static_cast<std::uint32_t>(b.size()),
                           b.last_in_epoch()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[static_cast<std::size_t>(rank)][s] = std::move(b);
  }
  hub_.publish(rank, ready);
}

serve::attached server::welcome_of(int rank, std::uint64_t start_epoch) const {
  const auto& l = feeds_.layout();
  auto info = pipeline_.info();
  serve::attached a;
  a.slots = feeds_.slots();
  a.slot_bytes = l.slot_bytes;
  a.ranks = static_cast<std::uint32_t>(feeds_.ranks());
  a.jobs = static_cast<std::uint32_t>(config_.jobs);
  a.epochs = info.epochs;
  a.dataset_size = info.dataset_size;
  a.batch_size = info.batch_size;
  a.channels = static_cast<std::uint32_t>(l.sample.channels);
  a.height = static_cast<std::uint32_t>(l.sample.height);
  a.width = static_cast<std::uint32_t>(l.sample.width);
  a.type = l.sample.type;
  a.key_bytes = l.key_bytes;
  a.writable = feeds_.region(rank).writable() && config_.jobs == 1;
  a.start_epoch = start_epoch;
  return a;
}

bool server::refuse(session& s, const error& why) {
  log("serve")->warn("client pid {}: {}", s.peer.pid, why.what());
  send(s.fd.get(), serve::failure{why.code(), why.message()});
  return false;
}

bool server::on_attach(session& s, const serve::attach& a) {
  if (s.attached()) {
    return refuse(s, error{errc::invalid_argument, "attach sent twice on one connection"});
  }
  auto job = static_cast<int>(a.job);
  auto rank = static_cast<int>(a.rank);
  int fd = s.fd.get();
  bool welcomed = true;
  auto ok = hub_.attach(
      job, rank, [fd](const serve::message& m) { return send(fd, m); },
      [&](std::uint64_t start_epoch) {
        welcomed = send(fd, welcome_of(rank, start_epoch), feeds_.region(rank).fd());
        log("serve")->info("rank {} of job {} attached (pid {}, uid {}), from epoch {}", rank, job,
                           s.peer.pid, s.peer.uid, start_epoch);
      });
  if (!ok) {
    return refuse(s, ok.error());
  }
  s.job = job;
  s.rank = rank;
  ++outcome_.attaches;
  return welcomed;
}

bool server::on_release(session& s, std::uint32_t slot) {
  if (!s.attached()) {
    return refuse(s, error{errc::invalid_argument, "release before attach"});
  }
  auto freed = hub_.release(s.job, s.rank, slot);
  if (!freed) {
    return refuse(s, freed.error());
  }
  if (*freed) {
    batch b;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      b = std::move(held_[static_cast<std::size_t>(s.rank)][slot]);
    }
    b.release();  // the slot goes back to the rank's feeder
    freed_.notify_all();
  }
  return true;
}

bool server::on_readable(session& s) {
  auto got = receive_serve(s.fd.get(), std::chrono::milliseconds(0));
  if (!got) {
    switch (got.error().code()) {
      case errc::timed_out:
        return true;  // nothing after all
      case errc::invalid_argument:
        return refuse(s, got.error());  // bytes that are not a message
      default:
        return false;  // gone, or a broken socket
    }
  }
  const auto& m = got->message;
  if (const auto* a = std::get_if<serve::attach>(&m)) {
    return on_attach(s, *a);
  }
  if (const auto* r = std::get_if<serve::release>(&m)) {
    return on_release(s, r->slot);
  }
  if (std::holds_alternative<serve::ask_report>(m)) {
    return send(s.fd.get(), node_report_of(pipeline_.report()));
  }
  return refuse(s, error{errc::invalid_argument,
                         "message type " + std::to_string(m.index() + 1) + " from a client"});
}

void server::drop(session& s) {
  if (s.attached()) {
    auto kept = hub_.detach(s.job, s.rank);
    outcome_.lost_clients += kept > 0 ? 1 : 0;
    log("serve")->warn(
        "rank {} of job {} detached (pid {}): {} unreleased batches kept for the "
        "next client of that rank and job",
        s.rank, s.job, s.peer.pid, kept);
  }
  s.fd.reset();
}

void server::accept_clients(std::list<session>& sessions) {
  for (;;) {
    auto c = accept_client(listener_.get());
    if (!c || !*c) {
      return;
    }
    set_send_timeout(c->get(), send_timeout);
    session s;
    s.peer = peer_of(c->get());
    s.fd = std::move(*c);
    sessions.push_back(std::move(s));
  }
}

serve_outcome server::run() {
  std::vector<std::thread> pullers;
  for (int r = 0; r < feeds_.ranks(); ++r) {
    pullers.emplace_back([this, r] { pull(r); });
  }
  std::list<session> sessions;
  while (!stop_.requested() && !hub_.done()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed_) {
        break;
      }
    }
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (auto& s : sessions) {
      fds.push_back({s.fd.get(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(poll_slice.count())) <= 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      accept_clients(sessions);
    }
    std::size_t i = 1;
    for (auto it = sessions.begin(); it != sessions.end() && i < fds.size(); ++i) {
      if (fds[i].revents != 0 && !on_readable(*it)) {
        drop(*it);
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  }
  outcome_.complete = hub_.done();
  outcome_.released_per_job = hub_.released_samples();
  pipeline_.shutdown();  // wakes pullers waiting for a batch
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;  // wakes pullers waiting for a slot
  }
  freed_.notify_all();
  for (auto& t : pullers) {
    t.join();
  }
  return outcome_;
}

}  // namespace

serve_outcome serve_clients(const serve_config& config, pipeline& p, const served_feeds& feeds,
                            unique_fd listener, stop_token& stop) {
  server s(config, p, feeds, std::move(listener), stop);
  return s.run();
}

}  // namespace conveyor

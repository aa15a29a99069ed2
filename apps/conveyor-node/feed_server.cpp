#include "apps/conveyor-node/feed_server.hpp"

#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "core/base/log.hpp"
#include "core/batching/resume_state.hpp"
#include "core/serving/blob_fd.hpp"
#include "core/serving/feed_hub.hpp"
#include "core/serving/serve_socket.hpp"
#include "core/serving/unix_socket.hpp"

namespace conveyor {
namespace {

constexpr auto poll_slice = std::chrono::milliseconds(100);
// A client that does not take a message within this long is treated as gone.
constexpr auto send_timeout = std::chrono::milliseconds(10000);

/// A resume state is at most a few hundred KB (resume_state.hpp); this bounds a bad client.
constexpr std::uint64_t max_state_bytes = 64U << 20U;

struct session {
  unique_fd fd;
  peer_identity peer;
  int job = -1;
  int rank = -1;
  /// serve.resume, before the pipeline starts: the attach waiting for it, and its state.
  std::optional<serve::attach> waiting;
  std::optional<resume_state> resume;
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
  server(const serve_config& c, std::optional<pipeline>& p, const pipeline_opener& open,
         std::uint64_t epochs, const served_feeds& f, unique_fd l, stop_token& s)
      : config_(c),
        pipeline_(p),
        open_(open),
        epochs_(epochs),
        feeds_(f),
        listener_(std::move(l)),
        stop_(s),
        held_(static_cast<std::size_t>(f.ranks())) {
    for (auto& slots : held_) {
      slots.resize(f.slots());
    }
  }

  serve_outcome run();

 private:
  void start_feeding(std::uint64_t first_epoch);
  void stop_feeding();
  bool running() const;
  bool on_attach_message(session& s, const serve::attach& a, unique_fd state);
  bool wait_for_start(session& s, const serve::attach& a, unique_fd state);
  void start_if_every_rank_waits();
  expected<resume_state> merged_start() const;
  void pull(int rank);
  void publish(int rank, batch b);
  bool wait_for_free_slot();
  void accept_clients();
  /// Reads one message of `s`; false when the session ends.
  bool on_readable(session& s);
  void take_last_releases(session& s);
  /// A session attached as rank `rank` of job `job` whose client has gone, though its end of
  /// the socket was not read to its end yet (the new client came first): dropped, its last
  /// releases taken, so that the new client takes its place.
  void drop_gone_holder(int job, int rank);
  bool on_attach(session& s, const serve::attach& a);
  bool on_release(session& s, std::uint32_t slot);
  bool refuse(session& s, const error& why);
  void drop(session& s);
  serve::attached welcome_of(int rank, std::uint64_t start_epoch) const;

  const serve_config& config_;
  std::optional<pipeline>& pipeline_;
  const pipeline_opener& open_;
  std::uint64_t epochs_;
  const served_feeds& feeds_;
  unique_fd listener_;
  stop_token& stop_;
  std::unique_ptr<feed_hub> hub_;  ///< once the pipeline runs
  std::vector<std::thread> pullers_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::vector<batch>> held_;  ///< [rank][slot]: published, not yet free
  std::list<session> sessions_;           ///< the connected clients (the poll loop's thread)
  bool failed_ = false;                   // under mutex_
  serve_outcome outcome_;
};

bool server::running() const {
  return hub_ != nullptr;
}

void server::start_feeding(std::uint64_t first_epoch) {
  hub_ = std::make_unique<feed_hub>(config_.jobs, feeds_.ranks(), epochs_, first_epoch);
  for (int r = 0; r < feeds_.ranks(); ++r) {
    pullers_.emplace_back([this, r] { pull(r); });
  }
}

void server::stop_feeding() {
  if (pipeline_) {
    pipeline_->shutdown();  // wakes pullers waiting for a batch
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;  // wakes pullers waiting for a slot
  }
  freed_.notify_all();
  for (auto& t : pullers_) {
    t.join();
  }
}

namespace {

std::string client_name(const serve::attach& a) {
  return "rank " + std::to_string(a.rank) + " of job " + std::to_string(a.job);
}

// The resume state that came with an attach, if one did.
expected<std::optional<resume_state>> state_of(const serve::attach& a, const unique_fd& fd) {
  const auto what = client_name(a) + "'s resume state";
  if (a.state_bytes == 0) {
    return std::optional<resume_state>{};
  }
  if (!fd) {
    return error{errc::invalid_argument, what + " was announced but its descriptor did not come"};
  }
  auto bytes = read_blob_fd(fd.get(), a.state_bytes, max_state_bytes, what);
  if (!bytes) {
    return std::move(bytes).error();
  }
  auto state = decode(*bytes, what);
  if (!state) {
    return std::move(state).error();
  }
  return std::optional<resume_state>(std::move(*state));
}

}  // namespace

// An attach: welcomed at once while the pipeline runs; with serve.resume before it does, kept
// until a client of every rank is there.
bool server::on_attach_message(session& s, const serve::attach& a, unique_fd state) {
  if (s.attached() || s.waiting) {
    return refuse(s, error{errc::invalid_argument, "attach sent twice on one connection"});
  }
  if (!running()) {
    return wait_for_start(s, a, std::move(state));
  }
  if (a.state_bytes > 0 && !config_.resume) {
    return refuse(
        s, error{errc::invalid_argument,
                 client_name(a) + " attached with a resume state, but this node started from the "
                                  "beginning (serve.resume = false) and would deliver again what "
                                  "the state has: start the node with serve.resume = true"});
  }
  return on_attach(s, a);
}

bool server::wait_for_start(session& s, const serve::attach& a, unique_fd state) {
  if (a.job >= static_cast<std::uint32_t>(config_.jobs) ||
      a.rank >= static_cast<std::uint32_t>(feeds_.ranks())) {
    return refuse(
        s, error{errc::invalid_argument, client_name(a) + ": this node serves ranks 0.." +
                                             std::to_string(feeds_.ranks() - 1) + " of jobs 0.." +
                                             std::to_string(config_.jobs - 1)});
  }
  auto got = state_of(a, state);
  if (!got) {
    return refuse(s, got.error());
  }
  s.waiting = a;
  s.resume = std::move(*got);
  log("serve")->info("{} (pid {}) waits for every rank to attach (serve.resume), {}",
                     client_name(a), s.peer.pid,
                     s.resume ? "with a resume state" : "with no resume state");
  return true;
}

expected<resume_state> server::merged_start() const {
  std::vector<resume_state> states;
  for (const auto& s : sessions_) {
    if (s.fd && s.waiting && s.resume) {
      states.push_back(*s.resume);
    }
  }
  return merge_states(states, "the resume states the ranks attached with");
}

// serve.resume: once a client of every rank waits, the pipeline starts from their states, and
// they are welcomed (or all refused, saying why, when it cannot start).
void server::start_if_every_rank_waits() {
  if (running() || !config_.resume) {
    return;
  }
  std::vector<bool> ranks(static_cast<std::size_t>(feeds_.ranks()), false);
  bool any_state = false;
  for (const auto& s : sessions_) {
    if (s.fd && s.waiting) {
      ranks[s.waiting->rank] = true;
      any_state = any_state || s.resume.has_value();
    }
  }
  if (std::count(ranks.begin(), ranks.end(), true) != feeds_.ranks()) {
    return;
  }
  expected<pipeline> opened = error{errc::invalid_argument, "not opened"};
  if (!any_state) {
    opened = open_(nullptr);
  } else if (auto start = merged_start(); !start) {
    opened = std::move(start).error();
  } else {
    run_state blob{encode(*start)};
    opened = open_(&blob);
  }
  if (!opened) {
    log("serve")->error("cannot start the pipeline: {}", opened.error().what());
    outcome_.start_failure = opened.error();
    for (auto& s : sessions_) {
      if (s.fd && s.waiting) {
        refuse(s, opened.error());
      }
    }
    return;
  }
  pipeline_.emplace(std::move(*opened));
  auto info = pipeline_->info();
  log("serve")->info(
      "every rank attached: the pipeline starts in epoch {}, {} samples delivered "
      "before",
      info.start_epoch, info.delivered_before);
  start_feeding(info.start_epoch);
  for (auto& s : sessions_) {
    if (s.fd && s.waiting) {
      auto a = *s.waiting;
      s.waiting.reset();
      if (!on_attach(s, a)) {
        drop(s);
      }
    }
  }
}

void server::pull(int rank) {
  while (!stop_.requested()) {
    auto b = pipeline_->next(rank);
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
        hub_->finish(rank);
        return;
      default: {
        log("serve")->error("rank {}: {}", rank, b.error().what());
        hub_->fail(b.error());
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
    hub_->fail(error{errc::invalid_argument, "a batch outside the shared slots (bug)"});
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
  hub_->publish(rank, ready);
}

serve::attached server::welcome_of(int rank, std::uint64_t start_epoch) const {
  const auto& l = feeds_.layout();
  auto info = pipeline_->info();
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
  a.seed = info.seed;
  a.shuffle = info.shuffle;
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
  drop_gone_holder(job, rank);
  int fd = s.fd.get();
  bool welcomed = true;
  auto ok = hub_->attach(
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
  auto freed = hub_->release(s.job, s.rank, slot);
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
        take_last_releases(s);
        return false;  // gone, or a broken socket
    }
  }
  const auto& m = got->message;
  if (const auto* a = std::get_if<serve::attach>(&m)) {
    return on_attach_message(s, *a, std::move(got->fd));
  }
  if (const auto* r = std::get_if<serve::release>(&m)) {
    return on_release(s, r->slot);
  }
  if (std::holds_alternative<serve::ask_report>(m)) {
    return send(s.fd.get(), node_report_of(pipeline_ ? pipeline_->report() : pipeline_report{}));
  }
  return refuse(s, error{errc::invalid_argument,
                         "message type " + std::to_string(m.index() + 1) + " from a client"});
}

// A client that died with messages of the node's unread (killed with batches announced) makes
// Linux report ECONNRESET on the node's end before the messages the client had sent, releases
// among them; the error is reported once, and the messages come after it. Without them, the
// batches the client had released would go to the next client of its rank again.
void server::take_last_releases(session& s) {
  for (;;) {
    auto got = receive_serve(s.fd.get(), std::chrono::milliseconds(0));
    if (!got) {
      return;
    }
    if (const auto* r = std::get_if<serve::release>(&got->message)) {
      on_release(s, r->slot);
    }
  }
}

namespace {

// The client at the other end of `fd` has closed it (its process died, or it detached).
bool hung_up(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
}

}  // namespace

void server::drop_gone_holder(int job, int rank) {
  for (auto& t : sessions_) {
    if (t.fd && t.job == job && t.rank == rank && hung_up(t.fd.get())) {
      take_last_releases(t);
      drop(t);  // its fd is reset: the poll loop forgets it
    }
  }
}

void server::drop(session& s) {
  if (s.waiting) {
    log("serve")->warn("rank {} of job {} (pid {}) left before the pipeline started",
                       s.waiting->rank, s.waiting->job, s.peer.pid);
  }
  if (s.attached()) {
    auto kept = hub_->detach(s.job, s.rank);
    outcome_.lost_clients += kept > 0 ? 1 : 0;
    log("serve")->warn(
        "rank {} of job {} detached (pid {}): {} unreleased batches kept for the "
        "next client of that rank and job",
        s.rank, s.job, s.peer.pid, kept);
  }
  s.fd.reset();
}

void server::accept_clients() {
  for (;;) {
    auto c = accept_client(listener_.get());
    if (!c || !*c) {
      return;
    }
    set_send_timeout(c->get(), send_timeout);
    session s;
    s.peer = peer_of(c->get());
    s.fd = std::move(*c);
    sessions_.push_back(std::move(s));
  }
}

serve_outcome server::run() {
  if (pipeline_) {
    start_feeding(0);
  }
  while (!stop_.requested() && !outcome_.start_failure && !(running() && hub_->done())) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed_) {
        break;
      }
    }
    sessions_.remove_if([](const session& s) { return !s.fd; });  // refused at the start
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (auto& s : sessions_) {
      fds.push_back({s.fd.get(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(poll_slice.count())) <= 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      accept_clients();
    }
    std::size_t i = 1;
    for (auto it = sessions_.begin(); it != sessions_.end() && i < fds.size(); ++i) {
      if (!it->fd) {
        ++it;  // dropped while another session was read (drop_gone_holder)
      } else if (fds[i].revents != 0 && !on_readable(*it)) {
        drop(*it);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
    start_if_every_rank_waits();
  }
  outcome_.complete = running() && hub_->done();
  outcome_.released_per_job =
      running() ? hub_->released_samples()
                : std::vector<std::uint64_t>(static_cast<std::size_t>(config_.jobs), 0);
  stop_feeding();
  return outcome_;
}

}  // namespace

serve_outcome serve_clients(const serve_config& config, std::optional<pipeline>& p,
                            const pipeline_opener& open, std::uint64_t epochs,
                            const served_feeds& feeds, unique_fd listener, stop_token& stop) {
  server s(config, p, open, epochs, feeds, std::move(listener), stop);
  return s.run();
}

}  // namespace conveyor

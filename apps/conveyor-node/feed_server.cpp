#include "apps/conveyor-node/feed_server.hpp"

#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "apps/conveyor-node/client_session.hpp"
#include "apps/conveyor-node/state_notary.hpp"
#include "core/base/log.hpp"
#include "core/base/log_throttle.hpp"
#include "core/serving/blob_fd.hpp"
#include "core/serving/feed_hub.hpp"
#include "core/serving/serve_socket.hpp"
#include "core/serving/unix_socket.hpp"

namespace conveyor {
namespace {

using steady = std::chrono::steady_clock;

constexpr auto poll_slice = std::chrono::milliseconds(100);
/// Connections accepted per turn of the poll loop, so that a flood of them cannot keep the
/// loop from the sessions it has.
constexpr int accepts_per_turn = 32;
/// A node out of descriptors tries accepting again after this long at first, then ever later.
constexpr auto first_accept_backoff = std::chrono::milliseconds(10);
constexpr auto max_accept_backoff = std::chrono::milliseconds(1000);
/// Client warnings logged per second at most (a flood of hostile connections would flood the
/// log otherwise); the next one that passes says how many were left out.
constexpr std::uint32_t warnings_per_second = 20;

serve::node_report node_report_of(const pipeline_report& r) {
  serve::node_report out{r.delivered,      r.quarantined, r.filtered, r.duplicates, r.lost,
                         r.steps_executed, r.retries,     r.restarts, r.handoffs,   r.finished};
  out.hangs = r.hangs;
  for (const auto& [name, ms] : r.sample_ms) {
    const auto at = serve::sample_figure_index(name);
    if (at && ms >= 0) {
      out.sample_us[*at] = name == "samples" ? static_cast<std::uint64_t>(ms)
                                             : static_cast<std::uint64_t>(ms * 1000.0);
    }
  }
  return out;
}

std::string client_name(std::uint32_t job, std::uint32_t rank) {
  return "rank " + std::to_string(rank) + " of job " + std::to_string(job);
}

// The client at the other end of `fd` has closed it (its process died, or it detached).
bool hung_up(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
}

class server {
 public:
  server(const serve_setup& setup, std::optional<pipeline>& p, const pipeline_opener& open,
         const served_feeds& f, int listener, stop_token& s);

  serve_outcome run();

 private:
  // The pipeline and its pullers.
  void start_feeding(std::uint64_t first_epoch);
  void stop_feeding();
  bool running() const { return hub_ != nullptr; }
  void pull(int rank);
  void publish(int rank, batch b);
  bool wait_for_free_slot();
  bool pipeline_failed();

  // Connections.
  void accept_clients();
  void admit(unique_fd c);
  bool make_room();
  void drop_misbehaving();
  void flush_outboxes(const std::vector<pollfd>& fds);
  std::vector<pollfd> poll_set();
  std::chrono::milliseconds poll_timeout() const;

  // Messages.
  bool on_readable(client_session& s);
  bool on_message(client_session& s, serve_received got);
  bool on_attach_message(client_session& s, const serve::attach& a, unique_fd state);
  bool wait_for_start(client_session& s, const serve::attach& a, unique_fd state);
  bool on_attach(client_session& s, const serve::attach& a);
  bool on_release(client_session& s, const serve::release& r);
  expected<void> note_wait(client_session& s, const serve::release& r);
  expected<void> release_slot(const client_session& s, std::uint32_t slot);
  bool on_ask_report(client_session& s);
  bool on_sign_state(client_session& s, const serve::sign_state& m, unique_fd state);
  void take_last_releases(client_session& s);
  void drop_gone_holder(int job, int rank);
  std::optional<error> out_of_range(const serve::attach& a) const;
  expected<std::optional<resume_state>> attach_state(const serve::attach& a, const unique_fd& fd);

  // serve.resume.
  void start_if_every_rank_waits();
  expected<pipeline> open_from_waiting_states();
  void welcome_waiting();

  bool refuse(client_session& s, const error& why);
  void drop(client_session& s);
  void warn(const std::string& line);
  serve::attached welcome_of(int rank, std::uint64_t start_epoch) const;
  bool all_released() const;

  const serve_setup& setup_;
  const serve_config& config_;
  std::optional<pipeline>& pipeline_;
  const pipeline_opener& open_;
  const served_feeds& feeds_;
  const int listener_;
  stop_token& stop_;
  const std::size_t max_sessions_;
  const std::size_t outbox_limit_;
  unique_fd wake_;  ///< an eventfd: an outbox has messages waiting, or overflowed
  std::unique_ptr<state_notary> notary_;  ///< when states are signed
  std::unique_ptr<feed_hub> hub_;         ///< once the pipeline runs
  std::vector<std::thread> pullers_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::vector<batch>> held_;  ///< [rank][slot]: published, not yet free
  std::list<client_session> sessions_;    ///< the connections (the poll loop's thread)
  bool failed_ = false;                   // under mutex_
  steady::time_point accept_after_{};
  std::chrono::milliseconds accept_backoff_{first_accept_backoff};
  log_throttle throttle_{warnings_per_second};
  serve_outcome outcome_;
};

server::server(const serve_setup& setup, std::optional<pipeline>& p, const pipeline_opener& open,
               const served_feeds& f, int listener, stop_token& s)
    : setup_(setup),
      config_(setup.config),
      pipeline_(p),
      open_(open),
      feeds_(f),
      listener_(listener),
      stop_(s),
      max_sessions_(static_cast<std::size_t>(
          config_.max_sessions > 0 ? config_.max_sessions : 4 * config_.jobs * f.ranks())),
      // Every slot's batch, then end, a failure and a few answers: what an honest client has
      // unread at most.
      outbox_limit_(static_cast<std::size_t>(f.slots()) + 8),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      held_(static_cast<std::size_t>(f.ranks())) {
  for (auto& slots : held_) {
    slots.resize(f.slots());
  }
  if (setup.key != nullptr) {
    notary_ = std::make_unique<state_notary>(setup.run, config_.jobs, f.ranks(), *setup.key);
  }
}

void server::warn(const std::string& line) {
  std::uint64_t left_out = 0;
  if (!throttle_.allow(steady::now(), left_out)) {
    return;
  }
  if (left_out > 0) {
    log("serve")->warn("({} more client warnings left out of the log)", left_out);
  }
  log("serve")->warn("{}", line);
}

// --- the pipeline and its pullers ----------------------------------------------------------

void server::start_feeding(std::uint64_t first_epoch) {
  hub_ = std::make_unique<feed_hub>(config_.jobs, feeds_.ranks(), setup_.run.epochs, first_epoch);
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

bool server::pipeline_failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
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
  if (notary_) {
    notary_->published(rank, b.epoch(), b.sample_ids(), b.last_in_epoch());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[static_cast<std::size_t>(rank)][s] = std::move(b);
  }
  hub_->publish(rank, ready);
}

// --- connections ---------------------------------------------------------------------------

// Accepts pending connections; a node out of descriptors says so once and waits a while before
// it tries again (the connection stays pending), instead of spinning on a listener that stays
// readable.
void server::accept_clients() {
  for (int i = 0; i < accepts_per_turn && steady::now() >= accept_after_; ++i) {
    auto c = accept_client(listener_);
    if (!c) {
      if (accept_backoff_ == first_accept_backoff || c.error().code() != errc::resource_exhausted) {
        log("serve")->error("{}: not accepting clients for {} ms", c.error().what(),
                            accept_backoff_.count());
      }
      accept_after_ = steady::now() + accept_backoff_;
      accept_backoff_ = std::min(accept_backoff_ * 2, max_accept_backoff);
      return;
    }
    if (!*c) {
      return;  // none pending
    }
    if (accept_backoff_ != first_accept_backoff) {
      log("serve")->info("accepting clients again");
      accept_backoff_ = first_accept_backoff;
    }
    admit(std::move(*c));
  }
}

void server::admit(unique_fd c) {
  client_session s;
  s.peer = peer_of(c.get());
  s.since = steady::now();
  s.outbox = std::make_shared<session_outbox>(c.get(), outbox_limit_, [fd = wake_.get()] {
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  });
  s.fd = std::move(c);
  sessions_.push_back(std::move(s));
  if (!make_room()) {
    refuse(sessions_.back(),
           error{errc::resource_exhausted,
                 "this node serves at most " + std::to_string(max_sessions_) +
                     " connections (serve.max_sessions), every one of them attached"});
    drop(sessions_.back());
  }
}

// Over serve.max_sessions: the oldest connection that has not attached makes room; false when
// every connection has attached (or waits to).
bool server::make_room() {
  std::size_t open = 0;
  for (const auto& s : sessions_) {
    open += s.fd ? 1 : 0;
  }
  if (open <= max_sessions_) {
    return true;
  }
  for (auto& s : sessions_) {
    if (s.fd && s.pending() && &s != &sessions_.back()) {
      refuse(s, error{errc::resource_exhausted,
                      "closed to make room for a newer connection (serve.max_sessions = " +
                          std::to_string(max_sessions_) + "): attach as soon as you connect"});
      drop(s);
      return true;
    }
  }
  return false;
}

// Drops the sessions that broke a rule: did not attach in time, did not read what the node
// sent, or whose socket failed.
void server::drop_misbehaving() {
  const auto now = steady::now();
  const auto attach_timeout = std::chrono::duration<double>(config_.attach_timeout_s);
  for (auto& s : sessions_) {
    if (!s.fd) {
      continue;
    }
    if (s.outbox->overflowed()) {
      ++outcome_.slow_clients;
      warn("client pid " + std::to_string(s.peer.pid) +
           " does not read what the node sends (more than " + std::to_string(outbox_limit_) +
           " messages waiting): dropped");
      take_last_releases(s);
      drop(s);
    } else if (s.outbox->broken()) {
      take_last_releases(s);
      drop(s);
    } else if (s.pending() && now - s.since > attach_timeout) {
      refuse(s, error{errc::timed_out, "no attach within serve.attach_timeout_s = " +
                                           std::to_string(config_.attach_timeout_s) + " s"});
      drop(s);
    }
  }
}

std::vector<pollfd> server::poll_set() {
  std::vector<pollfd> fds{{wake_.get(), POLLIN, 0}};
  fds.push_back({steady::now() >= accept_after_ ? listener_ : -1, POLLIN, 0});
  for (auto& s : sessions_) {
    const short out = s.outbox->pending() ? POLLOUT : 0;
    fds.push_back({s.fd.get(), static_cast<short>(POLLIN | out), 0});
  }
  return fds;
}

std::chrono::milliseconds server::poll_timeout() const {
  const auto now = steady::now();
  if (accept_after_ <= now) {
    return poll_slice;
  }
  const auto until_accept = std::chrono::ceil<std::chrono::milliseconds>(accept_after_ - now);
  return std::clamp(until_accept, std::chrono::milliseconds(1), poll_slice);
}

void server::flush_outboxes(const std::vector<pollfd>& fds) {
  std::size_t i = 2;
  for (auto& s : sessions_) {
    if (i < fds.size() && (fds[i].revents & POLLOUT) != 0) {
      s.outbox->flush();
    }
    ++i;
  }
}

// --- messages ------------------------------------------------------------------------------

bool server::on_readable(client_session& s) {
  auto got = receive_serve(s.fd.get(), std::chrono::milliseconds(0));
  if (!got) {
    switch (got.error().code()) {
      case errc::timed_out:
        return true;  // nothing after all
      case errc::invalid_argument:
        return refuse(s, got.error());  // not a message, or descriptors it does not take
      default:
        take_last_releases(s);
        return false;  // gone, or a broken socket
    }
  }
  return on_message(s, std::move(*got));
}

bool server::on_message(client_session& s, serve_received got) {
  const auto& m = got.message;
  if (const auto* a = std::get_if<serve::attach>(&m)) {
    return on_attach_message(s, *a, std::move(got.fd));
  }
  if (const auto* r = std::get_if<serve::release>(&m)) {
    return on_release(s, *r);
  }
  if (std::holds_alternative<serve::ask_report>(m)) {
    return on_ask_report(s);
  }
  if (const auto* sign = std::get_if<serve::sign_state>(&m)) {
    return on_sign_state(s, *sign, std::move(got.fd));
  }
  return refuse(s, error{errc::invalid_argument,
                         "message type " + std::to_string(m.index() + 1) + " from a client"});
}

std::optional<error> server::out_of_range(const serve::attach& a) const {
  if (a.job >= static_cast<std::uint32_t>(config_.jobs)) {
    return error{errc::invalid_argument, "job " + std::to_string(a.job) + " is not one of the " +
                                             std::to_string(config_.jobs) +
                                             " jobs this node serves (serve.jobs)"};
  }
  if (a.rank >= static_cast<std::uint32_t>(feeds_.ranks())) {
    return error{errc::invalid_argument, "rank " + std::to_string(a.rank) + " is not one of the " +
                                             std::to_string(feeds_.ranks()) +
                                             " ranks this node serves (gpus)"};
  }
  return std::nullopt;
}

// The resume state an attach came with, checked against the run (none: nullopt).
expected<std::optional<resume_state>> server::attach_state(const serve::attach& a,
                                                           const unique_fd& fd) {
  if (a.state_bytes == 0) {
    return std::optional<resume_state>{};
  }
  const auto who = client_name(a.job, a.rank);
  if (!fd) {
    return error{errc::invalid_argument,
                 who + "'s resume state was announced but its descriptor did not come"};
  }
  auto state =
      read_client_state(fd.get(), a.state_bytes, a.job, a.rank, setup_.run, setup_.key, who);
  if (!state) {
    return std::move(state).error();
  }
  return std::optional<resume_state>(std::move(*state));
}

// An attach: welcomed at once while the pipeline runs; with serve.resume before it does, kept
// until a client of every rank is there.
bool server::on_attach_message(client_session& s, const serve::attach& a, unique_fd state) {
  if (!s.pending()) {
    return refuse(s, error{errc::invalid_argument, "attach sent twice on one connection"});
  }
  if (auto bad = out_of_range(a)) {
    return refuse(s, *bad);
  }
  if (a.state_bytes > 0 && !config_.resume) {
    return refuse(
        s, error{errc::invalid_argument,
                 client_name(a.job, a.rank) +
                     " attached with a resume state, but this node started from the beginning "
                     "(serve.resume = false) and would deliver again what the state has: start "
                     "the node with serve.resume = true"});
  }
  if (!running()) {
    return wait_for_start(s, a, std::move(state));
  }
  auto resumed = attach_state(a, state);
  if (!resumed) {
    return refuse(s, resumed.error());
  }
  if (notary_ && *resumed) {
    notary_->vouch_for(a.job, a.rank, **resumed);
  }
  return on_attach(s, a);
}

bool server::wait_for_start(client_session& s, const serve::attach& a, unique_fd state) {
  for (auto& t : sessions_) {
    if (&t != &s && t.fd && t.waiting && t.waiting->job == a.job && t.waiting->rank == a.rank) {
      if (!hung_up(t.fd.get())) {
        return refuse(s, error{errc::invalid_argument, client_name(a.job, a.rank) +
                                                           " waits for the start already (one "
                                                           "process per rank and job)"});
      }
      drop(t);  // gone before the start: this one takes its place
    }
  }
  auto got = attach_state(a, state);
  if (!got) {
    return refuse(s, got.error());
  }
  s.waiting = a;
  s.resume = std::move(*got);
  log("serve")->info("{} (pid {}) waits for every rank to attach (serve.resume), {}",
                     client_name(a.job, a.rank), s.peer.pid,
                     s.resume ? "with a resume state" : "with no resume state");
  return true;
}

serve::attached server::welcome_of(int rank, std::uint64_t start_epoch) const {
  const auto& l = feeds_.layout();
  auto info = pipeline_->info();
  serve::attached a;
  a.slots = feeds_.slots();
  a.slot_bytes = l.slot_bytes;
  a.header_bytes = l.header_bytes;
  a.ranks = static_cast<std::uint32_t>(feeds_.ranks());
  a.jobs = static_cast<std::uint32_t>(config_.jobs);
  a.epochs = info.epochs;
  a.dataset_size = info.dataset_size;
  a.batch_size = info.batch_size;
  a.writable = feeds_.region(rank).writable() && config_.jobs == 1;
  a.start_epoch = start_epoch;
  a.seed = info.seed;
  a.order = setup_.run.order;
  a.signs_states = notary_ != nullptr;
  return a;
}

bool server::on_attach(client_session& s, const serve::attach& a) {
  auto job = static_cast<int>(a.job);
  auto rank = static_cast<int>(a.rank);
  drop_gone_holder(job, rank);
  s.welcomed = std::chrono::steady_clock::now();  // before the client can hear of it
  s.waited_ns = 0;
  auto box = s.outbox;
  auto ok = hub_->attach(
      job, rank, [box](const serve::message& m) { return box->push(m); },
      [&](std::uint64_t start_epoch) {
        box->push(welcome_of(rank, start_epoch), feeds_.region(rank).fd());
        log("serve")->info("rank {} of job {} attached (pid {}, uid {}), from epoch {}", rank, job,
                           s.peer.pid, s.peer.uid, start_epoch);
      });
  if (!ok) {
    return refuse(s, ok.error());
  }
  s.job = job;
  s.rank = rank;
  ++outcome_.attaches;
  return true;
}

expected<void> server::release_slot(const client_session& s, std::uint32_t slot) {
  auto freed = hub_->release(s.job, s.rank, slot);
  if (!freed) {
    return std::move(freed).error();
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
  return {};
}

bool server::on_release(client_session& s, const serve::release& r) {
  if (!s.attached()) {
    return refuse(s, error{errc::invalid_argument, "release before attach"});
  }
  if (auto ok = note_wait(s, r); !ok) {
    return refuse(s, ok.error());
  }
  if (auto ok = release_slot(s, r.slot); !ok) {
    return refuse(s, ok.error());
  }
  return true;
}

// The trainer's wait the release says: never less than the last one said, never longer than the
// client has been attached (one steady clock on one machine); the rise goes to setup_.waits.
expected<void> server::note_wait(client_session& s, const serve::release& r) {
  const auto attached_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - s.welcomed)
                               .count();
  if (r.waited_ns < s.waited_ns || r.waited_ns > static_cast<std::uint64_t>(attached_ns)) {
    return error{errc::invalid_argument,
                 "release of slot " + std::to_string(r.slot) + " says its trainer waited " +
                     std::to_string(r.waited_ns) + " ns since it attached " +
                     std::to_string(attached_ns) + " ns ago (its last release said " +
                     std::to_string(s.waited_ns) + " ns)"};
  }
  if (setup_.waits) {
    setup_.waits->add(s.job, s.rank, static_cast<std::int64_t>(r.waited_ns - s.waited_ns));
  }
  s.waited_ns = r.waited_ns;
  return {};
}

bool server::on_ask_report(client_session& s) {
  if (!s.attached()) {
    return refuse(s, error{errc::invalid_argument, "report asked before attach"});
  }
  s.outbox->push(node_report_of(pipeline_->report()));
  return true;  // a client that does not read is dropped by drop_misbehaving, saying so
}

bool server::on_sign_state(client_session& s, const serve::sign_state& m, unique_fd state) {
  if (!s.attached()) {
    return refuse(s, error{errc::invalid_argument, "state to sign sent before attach"});
  }
  if (!notary_) {
    return refuse(s, error{errc::invalid_argument,
                           "this node signs no states (serve.state_key_file is not set)"});
  }
  const auto who =
      client_name(static_cast<std::uint32_t>(s.job), static_cast<std::uint32_t>(s.rank));
  if (!state) {
    return refuse(
        s, error{errc::invalid_argument, who + ": a state to sign came without its descriptor"});
  }
  auto blob = read_blob_fd(state.get(), m.state_bytes, max_encoded_size(setup_.run.dataset_size),
                           who + "'s state to sign");
  if (!blob) {
    return refuse(s, blob.error());
  }
  auto signature =
      notary_->sign(static_cast<std::uint32_t>(s.job), static_cast<std::uint32_t>(s.rank), *blob);
  if (!signature) {
    return refuse(s, signature.error());
  }
  s.outbox->push(serve::state_signed{signature->mac});
  return true;
}

// A client that died with messages of the node's unread (killed with batches announced) makes
// Linux report ECONNRESET on the node's end before the messages the client had sent, releases
// among them; the error is reported once, and the messages come after it. Without them, the
// batches the client had released would go to the next client of its rank again. Read at most
// as many messages as an honest client can have sent since (a release per slot, and a few
// more), so that a client cannot keep the node here.
//
// The reset comes first only when nothing read it yet: the first "gone" is read past (it may be
// the reset, with the releases behind it), the second one is the end (CI lost a release this way:
// 1 run in 6 of Serving.AClientKilledMidEpochLosesNothing gave its batch to the heir again).
// receive_message reports the reset as an error of its own: its size peek took the reset, and a
// receive into 0 bytes then swallowed the release behind it as "gone" (the same test, under
// ASan, until that was mended; FdPassing.APeerClosedWithOurMessageUnreadLosesNoneOfItsOwn).
void server::take_last_releases(client_session& s) {
  const auto most = static_cast<std::size_t>(feeds_.slots()) * 2 + 8;
  bool gone_once = false;
  for (std::size_t i = 0; i < most; ++i) {
    auto got = receive_serve(s.fd.get(), std::chrono::milliseconds(0));
    if (!got) {
      const auto code = got.error().code();
      if (code == errc::timed_out || (code == errc::disconnected && gone_once)) {
        return;
      }
      gone_once = gone_once || code == errc::disconnected;
      continue;  // the reset, or a bad message among them (its descriptors closed): past it
    }
    if (const auto* r = std::get_if<serve::release>(&got->message); r && s.attached()) {
      (void)note_wait(s, *r);          // a wait that cannot be: not counted
      (void)release_slot(s, r->slot);  // a slot it did not hold: nothing to take
    }
  }
}

// A session attached as rank `rank` of job `job` whose client has gone, though its end of the
// socket was not read to its end yet (the new client came first): dropped, its last releases
// taken, so that the new client takes its place.
void server::drop_gone_holder(int job, int rank) {
  for (auto& t : sessions_) {
    if (t.fd && t.job == job && t.rank == rank && hung_up(t.fd.get())) {
      take_last_releases(t);
      drop(t);  // its fd is reset: the poll loop forgets it
    }
  }
}

bool server::refuse(client_session& s, const error& why) {
  ++outcome_.refused;
  warn("client pid " + std::to_string(s.peer.pid) + " (uid " + std::to_string(s.peer.uid) +
       "): " + why.what());
  s.outbox->push(serve::failure{why.code(), why.message()});
  return false;
}

void server::drop(client_session& s) {
  if (!s.fd) {
    return;
  }
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
  s.outbox->close();
  s.fd.reset();
}

// --- serve.resume --------------------------------------------------------------------------

expected<pipeline> server::open_from_waiting_states() {
  std::vector<waiting_state> waiting;
  for (const auto& s : sessions_) {
    if (s.fd && s.waiting) {
      waiting.push_back({s.waiting->job, s.resume});
    }
  }
  auto start = start_state(waiting, config_.jobs, setup_.run);
  if (!start) {
    return std::move(start).error();
  }
  if (!*start) {
    return open_(nullptr);
  }
  run_state blob{encode(**start)};
  return open_(&blob);
}

// Once a client of every rank of every job waits, the pipeline starts from their states, and
// they are welcomed (or all refused, saying why, when it cannot start).
void server::start_if_every_rank_waits() {
  if (running() || !config_.resume) {
    return;
  }
  const auto ranks = static_cast<std::size_t>(feeds_.ranks());
  std::vector<bool> waiting(static_cast<std::size_t>(config_.jobs) * ranks, false);
  for (const auto& s : sessions_) {
    if (s.fd && s.waiting) {
      waiting[s.waiting->job * ranks + s.waiting->rank] = true;
    }
  }
  if (std::find(waiting.begin(), waiting.end(), false) != waiting.end()) {
    return;
  }
  auto opened = open_from_waiting_states();
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
      "every rank of every job attached: the pipeline starts in epoch {}, {} samples delivered "
      "before",
      info.start_epoch, info.delivered_before);
  start_feeding(info.start_epoch);
  welcome_waiting();
}

void server::welcome_waiting() {
  for (auto& s : sessions_) {
    if (!s.fd || !s.waiting) {
      continue;
    }
    auto a = *s.waiting;
    s.waiting.reset();
    if (notary_ && s.resume) {
      notary_->vouch_for(a.job, a.rank, *s.resume);
    }
    if (!on_attach(s, a)) {
      drop(s);
    }
  }
}

// --- the loop ------------------------------------------------------------------------------

// Every job released every sample the pipeline delivered in this run (its ledger also counts
// what a resumed epoch had delivered before the stop).
bool server::all_released() const {
  const auto info = pipeline_->info();
  const auto before_in_run = info.delivered_before - info.start_epoch * info.epoch_samples;
  const auto delivered = pipeline_->report().delivered - before_in_run;
  const auto released = hub_->released_samples();
  return std::all_of(released.begin(), released.end(),
                     [&](std::uint64_t r) { return r == delivered; });
}

serve_outcome server::run() {
  if (pipeline_) {
    start_feeding(0);
  }
  while (!stop_.requested() && !outcome_.start_failure &&
         !(running() && hub_->done() && !config_.linger) && !pipeline_failed()) {
    drop_misbehaving();
    sessions_.remove_if([](const client_session& s) { return !s.fd; });
    auto fds = poll_set();
    if (::poll(fds.data(), fds.size(), static_cast<int>(poll_timeout().count())) <= 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      std::uint64_t n = 0;
      (void)!::read(wake_.get(), &n, sizeof n);
    }
    flush_outboxes(fds);
    if (fds[1].revents != 0) {
      accept_clients();
    }
    std::size_t i = 2;
    for (auto it = sessions_.begin(); it != sessions_.end() && i < fds.size(); ++it, ++i) {
      if (it->fd && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !on_readable(*it)) {
        drop(*it);
      }
    }
    start_if_every_rank_waits();
  }
  outcome_.complete = running() && hub_->done() && all_released();
  outcome_.released_per_job =
      running() ? hub_->released_samples()
                : std::vector<std::uint64_t>(static_cast<std::size_t>(config_.jobs), 0);
  stop_feeding();
  return outcome_;
}

}  // namespace

serve_outcome serve_clients(const serve_setup& setup, std::optional<pipeline>& p,
                            const pipeline_opener& open, const served_feeds& feeds, int listener,
                            stop_token& stop) {
  server s(setup, p, open, feeds, listener, stop);
  return s.run();
}

}  // namespace conveyor

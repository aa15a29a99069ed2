#include "conveyor/client.hpp"

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>

#include "api/batch_source.hpp"
#include "api/client_connection.hpp"
#include "core/base/log.hpp"
#include "core/batching/delivery_tracker.hpp"
#include "core/serving/blob_fd.hpp"
#include "core/serving/feed_layout.hpp"
#include "core/serving/shared_region.hpp"
#include "core/serving/unix_socket.hpp"
#if CONVEYOR_HAVE_CUDA
#include "core/cuda/stream_callback.hpp"
#endif

namespace conveyor {
namespace {

using steady = std::chrono::steady_clock;

std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(s));
}

std::chrono::milliseconds left_until(steady::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now()));
}

// The "label" field of `b` (int32 scalars), when its feed has one.
std::vector<std::int32_t> labels_of(const host_batch& b) {
  auto i = b.schema->index_of(label_field_name);
  if (!i || b.fields[*i].type != dtype::int32 || b.fields[*i].rank != 1) {
    return {};
  }
  const auto& f = b.fields[*i];
  const auto* at = reinterpret_cast<const std::int32_t*>(b.host() + f.values);
  return {at, at + f.samples};
}

pipeline_report report_of(const serve::node_report& r) {
  pipeline_report out;
  out.delivered = r.delivered;
  out.quarantined = r.quarantined;
  out.filtered = r.filtered;
  out.duplicates = r.duplicates;
  out.lost = r.lost;
  out.steps_executed = r.steps_executed;
  out.retries = r.retries;
  out.restarts = r.restarts;
  out.handoffs = r.handoffs;
  out.finished = r.finished;
  out.hangs = r.hangs;
  if (r.sample_us[0] > 0) {
    for (std::size_t i = 0; i < r.sample_us.size(); ++i) {
      const auto value = static_cast<double>(r.sample_us[i]);
      out.sample_ms.emplace_back(serve::sample_figures[i], i == 0 ? value : value / 1000.0);
    }
  }
  return out;
}

}  // namespace

/// One attached rank: the connection, the mapped region, the batches received and not yet
/// handed out, and the slots this process holds. The client, its batches (as their home) and
/// its epoch ranges (as their stream) share it, so the region stays mapped while any batch
/// lives.
struct client::shared_state final : batch_home,
                                    batch_stream,
                                    std::enable_shared_from_this<shared_state> {
  shared_state(std::string path, unique_fd s, shared_region r, const serve::attached& a,
               feed_description feed, int rank_, int job_, const client_options& o,
               resume_state start)
      : socket_path(std::move(path)),
        socket(std::move(s)),
        region(std::move(r)),
        geometry(a),
        layout(feed.layout),
        schema(std::make_shared<const sample_schema>(std::move(feed.schema))),
        rank(rank_),
        job(job_),
        options(o),
        current_epoch(a.start_epoch),
        delivered(std::move(start), 1, 1) {}

  // batch_home: any thread.
  void give_back(const host_batch& b, consumer_stream stream) noexcept override;
  /// Tells the node that `slot` is free (any thread, also one of CUDA's).
  void release_now(std::uint32_t slot) noexcept;
  // batch_stream: the client's thread.
  expected<batch> next() override { return next_for(seconds_to_ms(options.next_timeout_s)); }
  std::uint64_t epochs_ended() const override { return current_epoch; }
  std::uint64_t epochs() const override { return geometry.epochs; }
  std::string name() const override {
    return "rank " + std::to_string(rank) + " of job " + std::to_string(job);
  }

  /// A batch, its wait counted in `waited_ns`.
  expected<batch> next_for(std::chrono::milliseconds wait);
  expected<batch> take_next(std::chrono::milliseconds wait);
  /// What next() returned so far, signed by the node when it signs states.
  expected<run_state> state();
  /// One message from the node, into the queue or the state; errors are the node's.
  expected<void> pump(steady::time_point deadline);
  /// A batch from the queue (or the end marker of the current epoch), if one is due.
  std::optional<expected<batch>> take_queued();
  batch end_marker();
  expected<batch> open_slot(const serve::batch_ready& ready);
  std::size_t held_count() const;
  void close() noexcept;

  const std::string socket_path;
  unique_fd socket;
  shared_region region;
  const serve::attached geometry;
  const feed_layout layout;
  const std::shared_ptr<const sample_schema> schema;  ///< the feed's fields (its header's)
  const int rank;
  const int job;
  const client_options options;
  // The client's thread only:
  std::deque<serve::batch_ready> queue;
  std::optional<serve::node_report> last_report;
  std::optional<serve::state_signed> last_signature;
  std::uint64_t current_epoch;
  bool ended = false;
  std::optional<error> failure;
  // Any thread, under `mutex`:
  mutable std::mutex mutex;
  std::set<std::uint32_t> held;
  std::set<std::uint32_t> releasing;  ///< given back, the trainer's GPU work on them pending
  bool closed = false;
  /// What next() returned (thread-safe itself).
  delivery_tracker delivered;
  /// The time the trainer spent in next() so far: each release tells the node (its stall).
  std::atomic<std::uint64_t> waited_ns{0};
};

// The trainer may still be copying the batch to its GPU (cudaHostRegister'd shared memory read
// by an asynchronous copy on `stream`): the node hears of the release once that work has
// completed. Without a stream (release(), a copy from pageable memory, a CPU trainer), at once.
void client::shared_state::give_back(const host_batch& b, consumer_stream stream) noexcept {
  const auto slot = static_cast<std::uint32_t>(b.slot);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed || held.erase(slot) == 0) {
      return;
    }
    releasing.insert(slot);
  }
#if CONVEYOR_HAVE_CUDA
  try {
    auto queued = cuda::call_when_done(stream.handle, [weak = weak_from_this(), slot] {
      if (auto state = weak.lock()) {
        state->release_now(slot);
      }
    });
    if (queued && *queued) {
      return;
    }
    if (!queued) {
      log("client")->warn(
          "{}: the release of slot {} could not wait for the GPU's work on it "
          "({}): released now",
          name(), slot, queued.error().what());
    }
  } catch (...) {  // NOLINT(bugprone-empty-catch): released below
  }
#else
  (void)stream;  // without CUDA no GPU work can read the batch
#endif
  release_now(slot);
}

void client::shared_state::release_now(std::uint32_t slot) noexcept {
  std::lock_guard<std::mutex> lock(mutex);
  if (closed || releasing.erase(slot) == 0) {
    return;
  }
  // A node that has gone needs no release; next() reports its absence.
  (void)send_to_node(socket.get(), socket_path,
                     serve::release{slot, waited_ns.load(std::memory_order_relaxed)});
}

std::size_t client::shared_state::held_count() const {
  std::lock_guard<std::mutex> lock(mutex);
  return held.size();
}

void client::shared_state::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (closed) {
      return;
    }
    closed = true;
  }
  // A half-close, then read until the node closes its end: a socket closed with messages
  // still unread makes the node's next receive fail at once (ECONNRESET), before the releases
  // sent just now, and the node would count those batches as unreleased.
  ::shutdown(socket.get(), SHUT_WR);
  const auto deadline = steady::now() + std::chrono::seconds(2);
  while (receive_serve(socket.get(), left_until(deadline))) {
  }
}

batch client::shared_state::end_marker() {
  auto marker = std::make_shared<host_batch>();
  marker->epoch = current_epoch++;
  marker->gpu = rank;
  marker->last_in_epoch = true;
  marker->schema = schema;
  return batch_access::make(std::move(marker), nullptr);
}

expected<batch> client::shared_state::open_slot(const serve::batch_ready& ready) {
  if (ready.slot >= geometry.slots) {
    return error{errc::invalid_argument, "the Conveyor node at " + socket_path + " named slot " +
                                             std::to_string(ready.slot) + " of " +
                                             std::to_string(geometry.slots)};
  }
  auto* slot = region.data() + layout.header_bytes +
               static_cast<std::size_t>(ready.slot) * layout.slot_bytes;
  auto contents = read_slot(layout, *schema, slot, ready.samples);
  if (!contents) {
    return std::move(contents).error();
  }
  auto b = std::make_shared<host_batch>();
  b->epoch = ready.epoch;
  b->index = ready.index;
  b->gpu = rank;
  b->slot = ready.slot;
  b->last_in_epoch = ready.last_in_epoch;
  b->schema = schema;
  b->fields = std::move(contents->fields);
  b->external = slot + layout.blob_offset;
  b->read_only = !geometry.writable;
  b->ready_ns = contents->published_ns;
  b->labels = labels_of(*b);
  b->sample_ids = std::move(contents->sample_ids);
  b->keys = std::move(contents->keys);
  {
    std::lock_guard<std::mutex> lock(mutex);
    held.insert(ready.slot);
  }
  current_epoch += ready.last_in_epoch ? 1 : 0;
  return batch_access::make(std::move(b), shared_from_this());
}

std::optional<expected<batch>> client::shared_state::take_queued() {
  if (queue.empty()) {
    if (ended && current_epoch < geometry.epochs) {
      return end_marker();  // the rest of the epoch went to an earlier client of this rank
    }
    return std::nullopt;
  }
  if (queue.front().epoch > current_epoch) {
    return end_marker();  // as above: this epoch's last batch was released before we came
  }
  auto ready = queue.front();
  queue.pop_front();
  return open_slot(ready);
}

expected<void> client::shared_state::pump(steady::time_point deadline) {
  auto got = receive_from_node(socket.get(), socket_path, left_until(deadline));
  if (!got) {
    return std::move(got).error();
  }
  auto& m = got->message;
  if (auto* b = std::get_if<serve::batch_ready>(&m)) {
    queue.push_back(*b);
  } else if (std::holds_alternative<serve::end>(m)) {
    ended = true;
  } else if (auto* r = std::get_if<serve::node_report>(&m)) {
    last_report = *r;
  } else if (auto* sig = std::get_if<serve::state_signed>(&m)) {
    last_signature = *sig;
  } else {
    return error{errc::invalid_argument, "the Conveyor node at " + socket_path +
                                             " sent message type " + std::to_string(m.index() + 1) +
                                             " out of turn"};
  }
  return {};
}

expected<batch> client::shared_state::next_for(std::chrono::milliseconds wait) {
  const auto start = steady::now();
  auto got = take_next(wait);
  waited_ns.fetch_add(
      static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - start).count()),
      std::memory_order_relaxed);
  return got;
}

expected<batch> client::shared_state::take_next(std::chrono::milliseconds wait) {
  const auto deadline = steady::now() + wait;
  for (;;) {
    if (failure) {
      return *failure;
    }
    if (auto b = take_queued()) {
      if (!*b) {
        failure = b->error();
      } else {
        const auto& got = **b;
        delivered.record(0, got.epoch(), got.sample_ids(), got.last_in_epoch());
      }
      return std::move(*b);
    }
    if (ended) {
      return error{errc::not_found, "no more batches for " + name() + ": its " +
                                        std::to_string(geometry.epochs) + " epochs have ended"};
    }
    if (held_count() >= geometry.slots) {
      return error{errc::resource_exhausted,
                   name() + ": this process holds all " + std::to_string(geometry.slots) +
                       " batch slots of its rank (the node's pipeline.prefetch_batches + 1), so "
                       "no batch can come: release one before asking for the next"};
    }
    if (auto ok = pump(deadline); !ok) {
      if (ok.error().code() != errc::timed_out) {
        failure = ok.error();
        return *failure;
      }
      return error{errc::timed_out, name() + ": no batch from the Conveyor node at " + socket_path +
                                        " within " + std::to_string(wait.count()) + " ms"};
    }
  }
}

expected<run_state> client::shared_state::state() {
  auto blob = encode(delivered.state());
  if (!geometry.signs_states) {
    return run_state{std::move(blob)};
  }
  if (failure) {
    return *failure;
  }
  auto fd = blob_fd(blob, "conveyor-resume-state");
  if (!fd) {
    return std::move(fd).error();
  }
  const serve::sign_state ask{static_cast<std::uint32_t>(blob.size())};
  if (auto ok = send_to_node(socket.get(), socket_path, ask, fd->get()); !ok) {
    return std::move(ok).error();
  }
  last_signature.reset();
  const auto deadline = steady::now() + seconds_to_ms(options.next_timeout_s);
  while (!last_signature) {
    if (auto ok = pump(deadline); !ok) {
      failure = ok.error();
      return std::move(ok).error();
    }
  }
  return run_state{append_signature(
      std::move(blob),
      {static_cast<std::uint32_t>(job), static_cast<std::uint32_t>(rank), last_signature->mac})};
}

// --- client ------------------------------------------------------------------------------

client::client(std::shared_ptr<shared_state> s) : state_(std::move(s)) {}
client::client(client&&) noexcept = default;
client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    close();
    state_ = std::move(other.state_);
  }
  return *this;
}
client::~client() {
  close();
}

namespace {

// attach{} out (with the resume state's memfd, if any), attached{} and the region's
// descriptor back.
expected<serve_received> handshake(int socket, const std::string& path, int rank, int job,
                                   const client_options& options) {
  serve::attach hello{static_cast<std::uint32_t>(job), static_cast<std::uint32_t>(rank),
                      static_cast<std::uint32_t>(options.resume.bytes.size())};
  unique_fd state;
  if (!options.resume.bytes.empty()) {
    auto made = blob_fd(options.resume.bytes, "conveyor-resume-state");
    if (!made) {
      return std::move(made).error();
    }
    state = std::move(*made);
  }
  if (auto ok = send_to_node(socket, path, hello, state ? state.get() : -1); !ok) {
    return std::move(ok).error();
  }
  auto timeout = seconds_to_ms(options.next_timeout_s);
  auto got = receive_from_node(socket, path, timeout);
  if (!got) {
    return got;
  }
  if (!std::holds_alternative<serve::attached>(got->message) || !got->fd) {
    return error{errc::invalid_argument,
                 "the Conveyor node at " + path + " did not answer attach with its feed"};
  }
  return got;
}

// Where this client's record of what it received starts: the state it resumes from (checked
// to be of the node's run), or a fresh one naming the run.
expected<resume_state> starting_point(const serve::attached& a, const run_state& resume,
                                      const std::string& path) {
  if (resume.bytes.empty()) {
    return resume_state{a.dataset_size, a.seed, a.order, a.epochs, 0, {}};
  }
  return decode_for_run(resume.bytes, "the state attached to the Conveyor node at " + path,
                        a.dataset_size, a.seed, a.order, a.epochs);
}

}  // namespace

expected<client> client::attach(const std::filesystem::path& socket, int rank, int job,
                                const client_options& options) {
  const std::string path = socket.string();
  if (rank < 0 || job < 0) {
    return error{errc::invalid_argument, "client::attach(" + path + ", rank " +
                                             std::to_string(rank) + ", job " + std::to_string(job) +
                                             "): must be >= 0"};
  }
  const auto deadline = steady::now() + seconds_to_ms(options.attach_timeout_s);
  expected<unique_fd> connection = error{errc::not_found, path};
  expected<serve_received> got = error{errc::not_found, path};
  do {  // a node with every connection busy: tried again until the attach timeout
    connection = connect_unix(path, left_until(deadline));
    if (!connection) {
      return std::move(connection).error();
    }
    if (auto trusted = require_peer_user(connection->get(), path, options.expected_uid); !trusted) {
      return std::move(trusted).error();
    }
    got = handshake(connection->get(), path, rank, job, options);
  } while (!got && got.error().code() == errc::resource_exhausted && steady::now() < deadline);
  if (!got) {
    return std::move(got).error();
  }
  const auto a = std::get<serve::attached>(got->message);
  auto start = starting_point(a, options.resume, path);
  if (!start) {
    return std::move(start).error();
  }
  auto region = shared_region::attach(std::move(got->fd), a.writable);
  if (!region) {
    return std::move(region).error();
  }
  auto feed = decode_feed_header(region->data(), region->size());
  if (!feed || feed->layout.slot_bytes != a.slot_bytes || feed->slots != a.slots ||
      feed->layout.header_bytes != a.header_bytes || feed->layout.batch_size != a.batch_size) {
    return error{
        errc::invalid_argument,
        "the Conveyor node at " + path +
            " lays out its feed differently from what it "
            "said (" +
            (feed ? std::string("its header disagrees with its message") : feed.error().message()) +
            "; node and client must come from the same release)"};
  }
  return client(std::make_shared<shared_state>(path, std::move(*connection), std::move(*region), a,
                                               std::move(*feed), rank, job, options,
                                               std::move(*start)));
}

client_info client::info() const {
  const auto& a = state_->geometry;
  client_info i;
  i.rank = state_->rank;
  i.job = state_->job;
  i.ranks = static_cast<int>(a.ranks);
  i.jobs = static_cast<int>(a.jobs);
  i.epochs = a.epochs;
  i.dataset_size = a.dataset_size;
  i.batch_size = a.batch_size;
  i.slots = a.slots;
  if (const auto* image = state_->schema->find("image"); image && image->type.rank == 3) {
    i.channels = static_cast<int>(image->type.shape[0]);
    i.height = static_cast<int>(image->type.shape[1]);
    i.width = static_cast<int>(image->type.shape[2]);
    i.type = image->type.type;
  }
  i.writable = a.writable;
  i.start_epoch = a.start_epoch;
  return i;
}

int client::rank() const noexcept {
  return state_->rank;
}
int client::job() const noexcept {
  return state_->job;
}
std::uint64_t client::epochs() const noexcept {
  return state_->geometry.epochs;
}

expected<batch> client::next() {
  return state_->next();
}

expected<batch> client::next_for(std::chrono::milliseconds wait) {
  return state_->next_for(wait);
}

epoch_range client::epoch(std::uint64_t epoch) {
  return batch_access::range(state_, epoch);
}

expected<pipeline_report> client::report() {
  auto& s = *state_;
  if (s.failure) {
    return *s.failure;
  }
  if (auto ok = send_to_node(s.socket.get(), s.socket_path, serve::ask_report{}); !ok) {
    return std::move(ok).error();
  }
  s.last_report.reset();
  const auto deadline = steady::now() + seconds_to_ms(s.options.next_timeout_s);
  while (!s.last_report) {
    if (auto ok = s.pump(deadline); !ok) {
      return std::move(ok).error();
    }
  }
  return report_of(*s.last_report);
}

expected<run_state> client::state() {
  return state_->state();
}

mapped_memory client::memory() const noexcept {
  return {state_->region.data(), state_->region.size(), state_->region.writable()};
}

void client::close() noexcept {
  if (state_) {
    state_->close();
  }
}

}  // namespace conveyor

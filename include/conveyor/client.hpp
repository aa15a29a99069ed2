#pragma once
/// A trainer process that takes its batches from a Conveyor node on the same machine (the
/// node serves when its topology sets `serve.socket`; README: "Serve trainer processes").
/// One client per process and rank, as torchrun starts them:
///
///   auto feed = conveyor::client::attach("/run/conveyor/node.sock", rank, job);
///   for (std::uint64_t e = feed->info().start_epoch; e < feed->epochs(); ++e)
///     for (auto& batch : feed->epoch(e)) train(batch.tensor(), batch.labels());
///
/// Batches are the same `conveyor::batch` a pipeline hands out (conveyor/batch.hpp), and the
/// tensor lies in memory the node shares with this process: nothing is copied on the way. The
/// node prepares each rank's batches ahead in `pipeline.prefetch_batches + 1` slots; a batch's
/// slot goes back to the node when the batch is released or destroyed, so a trainer that keeps
/// batches slows the node down, never grows its memory. With `serve.jobs` > 1 every job gets
/// every batch of the rank, the same memory read by all (batch::writable() is false), and a
/// slot goes back when the last job releases it.
///
/// Every wait is bounded: next() gives up after `next_timeout_s` with errc::timed_out, and a
/// node that dies is errc::disconnected at once, never a hang. If this process dies, the node
/// keeps the batches it had not released for the next client that attaches as the same
/// (rank, job): nothing of the rank's epoch is lost.
///
/// Thread-safety: one thread calls next() / epoch() / report(); batches may be released from
/// any thread. Process-wide effects: none (no signal handlers; the socket is close-on-exec).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "conveyor/batch.hpp"
#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "conveyor/run_state.hpp"

namespace conveyor {

struct client_options {
  /// How long attach() waits for a node to listen on the socket (a trainer that starts before
  /// its node); 0: fail at once when none does.
  double attach_timeout_s = 0;
  /// next() waits at most this long for a batch (and attach() for the node's answer).
  double next_timeout_s = 300;
  /// Resume: this rank's state() from before a stop (bytes empty: a fresh start). A node with
  /// serve.resume = true starts once a client of every rank has attached, from the union of the
  /// states they attached with: each rank then gets its share of exactly the samples no rank
  /// had received, then the later epochs as if never interrupted. Errors as
  /// pipeline::open(..., resume)'s, naming the socket. A node that signs states
  /// (serve.state_key_file) takes only a state that a node with its key signed for this rank and
  /// job (what state() returns from such a node).
  run_state resume{};
  /// The user the node must run as: attach() checks who listens on the socket before it
  /// trusts it (a process of another user could squat a socket path in a shared directory).
  /// Unset: this process's own user or root.
  std::optional<std::uint32_t> expected_uid{};
};

/// What the node serves this client.
struct client_info {
  int rank = 0;
  int job = 0;
  int ranks = 0;  ///< ranks (GPUs) per job
  int jobs = 0;
  std::uint64_t epochs = 0;
  std::uint64_t dataset_size = 0;
  std::uint64_t batch_size = 0;
  std::uint64_t slots = 0;  ///< batches the node prepares ahead for this rank, plus one
  /// The image recipe's "image" field, when the feed has one of rank 3: channels x height x
  /// width elements of `type` (an extent that varies is -1); zeros otherwise. Every field is
  /// described by the batches themselves (batch::fields()).
  int channels = 0;
  int height = 0;
  int width = 0;
  dtype type = dtype::float32;
  bool writable = false;  ///< batches may be written in place (one job only)
  /// The epoch this client starts in: later than 0 when an earlier client of the same (rank,
  /// job) had finished epochs before it went away.
  std::uint64_t start_epoch = 0;
};

/// The host memory a feed lives in: register it once with a GPU runtime (cudaHostRegister,
/// read-only unless writable) to copy batches to the device without staging them again.
struct mapped_memory {
  const void* data = nullptr;
  std::size_t bytes = 0;
  bool writable = false;
};

/// Movable, not copyable.
class client {
 public:
  /// Connects to the node at `socket` as rank `rank` of job `job`. Errors name the socket:
  /// errc::not_found (no node listens there, after options.attach_timeout_s),
  /// errc::permission_denied (its serve.mode keeps this user out), errc::invalid_argument
  /// (the node's reason: a rank or job it does not serve, or one attached already), and
  /// errc::disconnected / errc::timed_out when the node goes away or does not answer.
  static expected<client> attach(const std::filesystem::path& socket, int rank = 0, int job = 0,
                                 const client_options& options = {});

  client(client&&) noexcept;
  client& operator=(client&&) noexcept;
  ~client();

  client_info info() const;
  int rank() const noexcept;
  int job() const noexcept;
  std::uint64_t epochs() const noexcept;

  /// The next batch of this rank. Errors: errc::not_found after the last epoch;
  /// errc::resource_exhausted at once when this process holds every slot of the rank;
  /// errc::timed_out after next_timeout_s; errc::disconnected when the node has gone (and
  /// whatever error the node failed with).
  expected<batch> next();
  /// The same, waiting at most `wait` (errc::timed_out says nothing came, and may be retried):
  /// for callers that must stay responsive (Ctrl-C in Python).
  expected<batch> next_for(std::chrono::milliseconds wait);
  /// The batches of epoch `epoch` as a range (conveyor/batch.hpp); `epoch` must be the one
  /// this rank is in.
  epoch_range epoch(std::uint64_t epoch);
  /// The node's own figures (its ledger, the steps it ran for all jobs); waits for the answer
  /// as next() waits for a batch.
  expected<pipeline_report> report();
  /// What this rank received so far (every batch next() returned, and what the state it
  /// resumed from had), to save with the trainer's checkpoint and attach with after a restart
  /// (client_options::resume). Every rank of a job saves its own. From a node that signs states
  /// (serve.state_key_file) the state comes signed: a round trip to the node, which waits as
  /// next() does; errors then as next()'s (errc::disconnected when the node has gone: a state
  /// the node cannot sign would be refused at the resume), and errc::permission_denied when the
  /// node will not vouch for it. Call it from the thread that calls next().
  expected<run_state> state();
  /// The shared memory batches lie in (see mapped_memory).
  mapped_memory memory() const noexcept;
  /// Detaches: the node takes back every batch not yet released, and hands them to the next
  /// client of this rank and job. Batches still held stay readable until destroyed; their
  /// release then does nothing. Idempotent; the destructor calls it.
  void close() noexcept;

 private:
  struct shared_state;
  explicit client(std::shared_ptr<shared_state> s);
  std::shared_ptr<shared_state> state_;
};

}  // namespace conveyor

#pragma once
/// Who has which batch of a served node: the bookkeeping between the pipeline's per-rank
/// feeds and the clients attached to them, with no sockets and no threads of its own (the
/// node's server drives it; tests drive it directly).
///
/// Every job receives every batch of every rank: a batch published for rank r goes to the
/// client attached as (job, r) of each job, and its slot comes back (release() returns true)
/// once the last job released it. A job whose rank-r client is not attached (yet, or any
/// more) keeps the batches it has not released: they wait for the next client that attaches
/// as that (job, rank), which receives them first, in publish order. So a client killed
/// mid-epoch loses nothing, and a slow or absent job holds the others back only by the slots
/// it keeps (the shared window), never by dropping data.
///
/// Thread-safe: every call takes one lock; a session's sender is called under it, so a sender
/// must not block for long (the server sends with a bounded timeout) and must not call back.

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "conveyor/error.hpp"
#include "core/serving/serve_protocol.hpp"

namespace conveyor {

class feed_hub {
 public:
  /// Sends a message to one client; false when it could not (the client is gone: the server
  /// will detach it when it sees the socket close).
  using sender = std::function<bool(const serve::message&)>;

  /// `epochs`: of each rank, for the epoch a fresh client starts in; `first_epoch`: the epoch
  /// the ranks' batches begin in (a resumed run's first epoch not ended).
  feed_hub(int jobs, int ranks, std::uint64_t epochs, std::uint64_t first_epoch = 0);

  /// Told the epoch a client starts in (the epoch of the first batch it will get), before
  /// any batch is sent to it: the server sends `attached` here.
  using welcomer = std::function<void(std::uint64_t start_epoch)>;

  /// A client attaches as (job, rank). errc::invalid_argument when either is out of range or
  /// a client is attached as that (job, rank) already. Otherwise `welcome`, then, in order,
  /// what the hub holds for this (job, rank): batches a previous client left unreleased, then
  /// those since; then end{} once the rank has finished (or failure{} once the node failed).
  expected<void> attach(int job, int rank, sender send, const welcomer& welcome);
  /// The client of (job, rank) is gone: what it held unreleased waits for the next one.
  /// Returns how many batches that is.
  std::size_t detach(int job, int rank);
  /// A batch of rank `rank` is ready in slot `b.slot`: sent to every attached job.
  void publish(int rank, const serve::batch_ready& b);
  /// Job `job`'s client of rank `rank` released `slot`: true when no job holds the slot any
  /// more (give it back to the pipeline). errc::invalid_argument when that client did not
  /// hold it.
  expected<bool> release(int job, int rank, std::uint32_t slot);
  /// Rank `rank` has no more batches: each of its clients gets end{} after its last batch.
  void finish(int rank);
  /// The node failed: every client gets failure{e}, and so does every later attach.
  void fail(const error& e);
  /// Every rank finished and every job released every batch.
  bool done() const;
  /// Samples released by each job so far.
  std::vector<std::uint64_t> released_samples() const;

 private:
  enum class held : std::uint8_t { pending, sent, released };
  struct entry {
    serve::batch_ready batch;
    std::vector<held> jobs;  ///< per job
  };
  struct rank_feed {
    std::deque<entry> entries;           ///< in publish order; removed once every job released
    std::vector<sender> clients;         ///< per job; empty when none is attached
    std::vector<bool> ended;             ///< per job: end{} sent to the attached client
    std::uint64_t epochs_published = 0;  ///< last_in_epoch batches published
    bool finished = false;
  };

  std::optional<error> check(int job, int rank) const;
  std::uint64_t start_epoch_locked(int job, const rank_feed& feed) const;
  /// Sends the client of (job, rank) what is pending for it, then end{} when due.
  void flush_locked(int job, rank_feed& feed);

  mutable std::mutex mutex_;
  const int jobs_;
  const std::uint64_t epochs_;
  std::vector<rank_feed> feeds_;
  std::vector<std::uint64_t> released_;
  std::optional<error> failure_;
};

}  // namespace conveyor

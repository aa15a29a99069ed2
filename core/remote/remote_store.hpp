#pragma once
/// The objects of one dataset in an object store, read through `s3.connections` connections:
/// ranges wanted ahead of the readers are queued, coalesced and fetched, and kept until they are
/// read once; a read of a range nobody fetched ahead is fetched at once, ahead of the queue.
///
/// Queue order: a reader's own read first, then the ranges of the samples handed to the readers
/// (the window), then the blocks that fill the cache; first come, first served within each.
/// A connection that takes a range takes with it every queued range of the same object that
/// follows or precedes it within a gap of 256 KiB (or s3.read_size / 8), up to s3.read_size in
/// all: one range GET, whose buffer the ranges then share. A range is read as soon as its own
/// bytes have arrived, not when its GET's last have (the first of a GET are its most urgent).
/// Each fetch is retried as s3_client.hpp says (a GET that broke off resumes after what it
/// received); a range that stays unreadable fails the reads of its samples alone, naming the
/// object's URL and the server's answer.
///
/// Memory: ranges fetched ahead and not read yet are s3.prefetch_bytes at most (a want past it
/// is declined: that sample is fetched when read). A read of more than largest_read() is
/// refused before a buffer is sized for it: sizes come from what the store said (a listing, an
/// index), and a store may lie. A buffer that cannot be had (or any exception of a fetch) fails
/// the reads of that fetch's ranges alone, naming the object; the connection's thread goes on.
/// Every wait is bounded: a read gives up after the time its fetch may take with every retry
/// (timed_out).
///
/// Thread-safe. The connections' threads stop when the store is destroyed; reads waiting then
/// fail (io_error).

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/error.hpp"
#include "core/remote/s3_client.hpp"
#include "core/remote/s3_location.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

/// An object a dataset reads: its key and its size (from the manifest or a listing).
struct remote_object_ref {
  std::string key;
  std::uint64_t size = 0;
};

/// How urgent a range is.
enum class fetch_priority : std::uint8_t { read = 0, window = 1, fill = 2 };

/// A range of an object wanted ahead of its read.
struct range_want {
  std::size_t object = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  fetch_priority priority = fetch_priority::window;
};

class remote_store : public std::enable_shared_from_this<remote_store> {
 public:
  /// Starts settings.connections connections to `bucket`.
  static std::shared_ptr<remote_store> open(std::string bucket,
                                            std::vector<remote_object_ref> objects,
                                            std::shared_ptr<const s3_access> access,
                                            const s3_settings& settings,
                                            std::shared_ptr<transfer_counters> counters,
                                            std::uint64_t prefetch_bytes);
  ~remote_store();
  remote_store(const remote_store&) = delete;
  remote_store& operator=(const remote_store&) = delete;

  /// Queues each range of `ranges` to be fetched and kept until read, for epoch `epoch`'s
  /// samples (nullopt: for opening the dataset), all at once (so that the connections see them
  /// together and coalesce them). A range already wanted, or past the bytes fetched ahead at
  /// most, is not queued. How many were. Precondition: the ranges lie within their objects.
  std::size_t want(const std::vector<range_want>& ranges, std::optional<std::uint64_t> epoch);
  /// Exactly `size` bytes at `offset` of object `object` into `into`: a range wanted at that
  /// offset (taken: it is read once), or fetched now. Errors name the object's URL; a size past
  /// largest_read() is refused (io_error) before anything is asked or allocated.
  expected<void> read(std::size_t object, std::uint64_t offset, std::uint8_t* into,
                      std::size_t size);
  /// Drops what was fetched ahead of object `object` and not read (a tar's blocks after its
  /// listing).
  void forget(std::size_t object);

  /// Object `object` as a byte source (its URL names it in messages); it keeps the store alive.
  std::shared_ptr<const byte_source> source(std::size_t object);

  std::size_t objects() const noexcept { return objects_.size(); }
  const remote_object_ref& object(std::size_t i) const { return objects_[i]; }
  std::string url(std::size_t object) const;
  std::uint64_t read_size() const noexcept { return settings_.read_size; }
  /// The most bytes one read may ask for, and a sample's reads together: what the configuration
  /// allows in flight (the bytes fetched ahead at most, s3.prefetch_bytes' budget), and at
  /// least one request of s3.read_size.
  std::uint64_t largest_read() const noexcept;
  /// The message of a read of `size` bytes past largest_read(), after "<what>: ".
  std::string too_large(std::uint64_t size) const;
  /// Bytes fetched ahead (or being fetched) and not read yet.
  std::uint64_t ahead_bytes() const;
  const std::shared_ptr<transfer_counters>& counters() const noexcept { return counters_; }

 private:
  struct slot;
  using place = std::pair<std::size_t, std::uint64_t>;  ///< (object, offset)

  remote_store(std::string bucket, std::vector<remote_object_ref> objects,
               std::shared_ptr<const s3_access> access, const s3_settings& settings,
               std::shared_ptr<transfer_counters> counters, std::uint64_t prefetch_bytes);
  void start();
  void run(int connection);
  void enqueue(const std::shared_ptr<slot>& s, bool notify);
  std::shared_ptr<slot> dequeue(slot* s);
  std::vector<std::shared_ptr<slot>> take_request();
  /// One range GET of `group`'s ranges (sorted by their ends); each is settled as soon as its
  /// own bytes are in. A buffer that cannot be had fails them all.
  void fetch(s3_client& client, std::vector<std::shared_ptr<slot>>& group);
  /// `slots` done: their bytes lie in `bytes` (from offset `first` of their object), or they
  /// failed with `failed`. Slots settled before are left as they are.
  void settle(const std::vector<std::shared_ptr<slot>>& slots,
              const std::shared_ptr<const std::uint8_t[]>& bytes, std::uint64_t first,
              const std::optional<error>& failed);
  std::chrono::milliseconds wait_bound() const;

  std::string bucket_;
  std::vector<remote_object_ref> objects_;
  std::shared_ptr<const s3_access> access_;
  s3_settings settings_;
  std::shared_ptr<transfer_counters> counters_;
  std::uint64_t prefetch_bytes_;

  mutable std::mutex mutex_;
  std::condition_variable work_;     ///< a range was queued, or the store stops
  std::condition_variable settled_;  ///< a fetch ended
  bool stopping_ = false;
  std::uint64_t next_seq_ = 0;
  std::optional<std::uint64_t> epoch_;            ///< the latest epoch wanted for: a read's epoch
  std::map<place, std::shared_ptr<slot>> ahead_;  ///< wanted, not read yet
  std::uint64_t ahead_bytes_ = 0;
  /// Queued, not taken by a connection yet: by (priority, seq), and by place to coalesce.
  std::map<std::pair<int, std::uint64_t>, std::shared_ptr<slot>> queue_;
  std::multimap<place, slot*> queued_;
  std::vector<std::thread> threads_;
};

}  // namespace conveyor

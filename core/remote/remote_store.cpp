#include "core/remote/remote_store.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/base/fault_light_buffer.hpp"
#include "core/base/memory_bound.hpp"

namespace conveyor {

struct remote_store::slot {
  std::size_t object = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  int priority = 0;
  std::uint64_t seq = 0;
  std::optional<std::uint64_t> epoch;
  bool queued = false;
  bool done = false;
  /// The fetched bytes: this slot's lie at `at` of the request's buffer (shared by the slots
  /// it coalesced: none is copied out).
  std::shared_ptr<const std::uint8_t[]> bytes;
  std::size_t at = 0;
  std::optional<error> failure;

  std::uint64_t end() const { return offset + size; }
};

namespace {

// Object `object` of a store as a byte source: reads go through the store.
class remote_object final : public byte_source {
 public:
  remote_object(std::shared_ptr<remote_store> store, std::size_t object)
      : store_(std::move(store)), object_(object), name_(store_->url(object)) {}
  const std::string& name() const noexcept override { return name_; }
  std::uint64_t size() const noexcept override { return store_->object(object_).size; }
  expected<void> read_at(std::uint64_t offset, std::uint8_t* dst, std::size_t n) const override {
    if (n == 0) {
      return {};
    }
    if (offset > size() || n > size() - offset) {
      return error{errc::io_error, name_ + ": a read of " + std::to_string(n) + " bytes at " +
                                       std::to_string(offset) + " runs past its " +
                                       std::to_string(size()) + " bytes"};
    }
    return store_->read(object_, offset, dst, n);
  }

 private:
  std::shared_ptr<remote_store> store_;
  std::size_t object_;
  std::string name_;
};

}  // namespace

std::shared_ptr<remote_store> remote_store::open(std::string bucket,
                                                 std::vector<remote_object_ref> objects,
                                                 std::shared_ptr<const s3_access> access,
                                                 const s3_settings& settings,
                                                 std::shared_ptr<transfer_counters> counters,
                                                 std::uint64_t prefetch_bytes) {
  std::shared_ptr<remote_store> store(new remote_store(std::move(bucket), std::move(objects),
                                                       std::move(access), settings,
                                                       std::move(counters), prefetch_bytes));
  store->start();
  return store;
}

remote_store::remote_store(std::string bucket, std::vector<remote_object_ref> objects,
                           std::shared_ptr<const s3_access> access, const s3_settings& settings,
                           std::shared_ptr<transfer_counters> counters,
                           std::uint64_t prefetch_bytes)
    : bucket_(std::move(bucket)),
      objects_(std::move(objects)),
      access_(std::move(access)),
      settings_(settings),
      counters_(std::move(counters)),
      prefetch_bytes_(prefetch_bytes) {}

void remote_store::start() {
  for (int i = 0; i < std::max(1, settings_.connections); ++i) {
    threads_.emplace_back([this, i] { run(i); });
  }
}

remote_store::~remote_store() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  settled_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
}

std::string remote_store::url(std::size_t object) const {
  return "s3://" + bucket_ + "/" + objects_[object].key;
}

std::uint64_t remote_store::largest_read() const noexcept {
  return std::max(prefetch_bytes_, settings_.read_size);
}

std::string remote_store::too_large(std::uint64_t size) const {
  return std::to_string(size) + " bytes, more than the " + std::to_string(largest_read()) +
         " a read may ask for (what s3.prefetch_bytes allows in flight: by default the cache's "
         "memory plus two requests per connection); refused before a buffer is sized for it";
}

std::uint64_t remote_store::ahead_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ahead_bytes_;
}

std::shared_ptr<const byte_source> remote_store::source(std::size_t object) {
  return std::make_shared<remote_object>(shared_from_this(), object);
}

void remote_store::enqueue(const std::shared_ptr<slot>& s, bool notify) {
  s->seq = next_seq_++;
  s->queued = true;
  queue_[{s->priority, s->seq}] = s;
  queued_.emplace(place{s->object, s->offset}, s.get());
  if (notify) {
    work_.notify_one();
  }
}

std::shared_ptr<remote_store::slot> remote_store::dequeue(slot* s) {
  auto at = queue_.find({s->priority, s->seq});
  auto owned = at->second;
  queue_.erase(at);
  auto [first, last] = queued_.equal_range({s->object, s->offset});
  for (auto it = first; it != last; ++it) {
    if (it->second == s) {
      queued_.erase(it);
      break;
    }
  }
  s->queued = false;
  return owned;
}

std::size_t remote_store::want(const std::vector<range_want>& ranges,
                               std::optional<std::uint64_t> epoch) {
  std::size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (epoch) {
      epoch_ = std::max(epoch_.value_or(0), *epoch);
    }
    for (const auto& r : ranges) {
      const place at{r.object, r.offset};
      if (stopping_ || ahead_.count(at) != 0 || queued_.count(at) != 0 ||
          ahead_bytes_ + r.size > prefetch_bytes_) {
        continue;
      }
      auto s = std::make_shared<slot>();
      s->object = r.object;
      s->offset = r.offset;
      s->size = r.size;
      s->priority = static_cast<int>(r.priority);
      s->epoch = epoch;
      ahead_[at] = s;
      ahead_bytes_ += r.size;
      enqueue(s, false);
      ++queued;
    }
  }
  if (queued > 0) {
    work_.notify_all();
  }
  return queued;
}

void remote_store::forget(std::size_t object) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = ahead_.lower_bound({object, 0});
       it != ahead_.end() && it->first.first == object;) {
    if (it->second->queued) {
      dequeue(it->second.get());
    }
    ahead_bytes_ -= it->second->size;
    it = ahead_.erase(it);
  }
}

std::chrono::milliseconds remote_store::wait_bound() const {
  // A fetch's every attempt with its longest backoff, twice: once for the fetch a connection is
  // busy with when this read is queued, once for this read's own.
  const auto attempt =
      std::chrono::milliseconds(settings_.request_timeout_ms) + std::chrono::milliseconds(20000);
  return 2 * (settings_.retries + 1) * attempt;
}

expected<void> remote_store::read(std::size_t object, std::uint64_t offset, std::uint8_t* into,
                                  std::size_t size) {
  if (size > largest_read()) {
    return error{errc::io_error,
                 url(object) + ": a read at " + std::to_string(offset) + " of " + too_large(size)};
  }
  std::shared_ptr<slot> s;
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = ahead_.find({object, offset});
  if (it != ahead_.end() && it->second->size >= size) {
    s = it->second;
    ahead_.erase(it);
    ahead_bytes_ -= s->size;
    if (s->queued && s->priority > static_cast<int>(fetch_priority::read)) {
      dequeue(s.get());
      s->priority = static_cast<int>(fetch_priority::read);
      enqueue(s, true);
    }
  } else {
    s = std::make_shared<slot>();
    s->object = object;
    s->offset = offset;
    s->size = size;
    s->priority = static_cast<int>(fetch_priority::read);
    s->epoch = epoch_;
    if (!stopping_) {
      enqueue(s, true);
    }
  }
  const bool settled = settled_.wait_for(lock, wait_bound(), [&] { return s->done || stopping_; });
  if (!s->done) {
    return error{settled ? errc::io_error : errc::timed_out,
                 url(object) + ": " +
                     (settled ? std::string("the store was closed before the read of ")
                              : "no answer within the bound of every retry for the read of ") +
                     std::to_string(size) + " bytes at " + std::to_string(offset)};
  }
  lock.unlock();
  if (s->failure) {
    return *s->failure;
  }
  std::memcpy(into, s->bytes.get() + s->at, size);
  return {};
}

std::vector<std::shared_ptr<remote_store::slot>> remote_store::take_request() {
  std::unique_lock<std::mutex> lock(mutex_);
  work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
  if (stopping_) {
    return {};
  }
  slot* first = queue_.begin()->second.get();
  std::vector<slot*> taken{first};
  std::uint64_t begin = first->offset;
  std::uint64_t end = first->end();
  // A gap is read rather than asked for apart when it is small: a quarter MiB is a few
  // milliseconds of one connection, below an object store's time to first byte.
  const std::uint64_t gap = std::min<std::uint64_t>(settings_.read_size / 8, 256u << 10);
  const std::uint64_t cap = std::max<std::uint64_t>(settings_.read_size, first->size);
  for (auto it = queued_.upper_bound({first->object, first->offset});
       it != queued_.end() && it->first.first == first->object; ++it) {
    auto* c = it->second;
    if (c->offset > end + gap || std::max(end, c->end()) - begin > cap) {
      break;
    }
    taken.push_back(c);
    end = std::max(end, c->end());
  }
  for (auto it = queued_.lower_bound({first->object, first->offset}); it != queued_.begin();) {
    --it;
    auto* c = it->second;
    if (it->first.first != first->object || c->end() + gap < begin ||
        end - std::min(begin, c->offset) > cap) {
      break;
    }
    taken.push_back(c);
    begin = std::min(begin, c->offset);
  }
  std::vector<std::shared_ptr<slot>> group;
  for (auto* c : taken) {
    group.push_back(dequeue(c));
  }
  return group;
}

void remote_store::run(int /*connection*/) {
  s3_client client(access_, settings_, counters_);
  for (;;) {
    std::vector<std::shared_ptr<slot>> group;
    try {
      group = take_request();
      if (group.empty()) {
        return;
      }
      fetch(client, group);
    } catch (const std::exception& e) {
      // Its readers are told, and the connection goes on: an exception that left this thread
      // would end the process.
      if (!group.empty()) {
        settle(group, nullptr, 0,
               error{errc::io_error, url(group.front()->object) + ": a fetch failed: " + e.what()});
      }
    }
  }
}

void remote_store::fetch(s3_client& client, std::vector<std::shared_ptr<slot>>& group) {
  // In the order their last bytes arrive: each is read as soon as its own bytes are in.
  std::sort(group.begin(), group.end(),
            [](const auto& a, const auto& b) { return a->end() < b->end(); });
  std::uint64_t first = group.front()->offset;
  std::optional<std::uint64_t> epoch;
  for (const auto& s : group) {
    first = std::min(first, s->offset);
    if (s->epoch) {
      epoch = std::min(epoch.value_or(*s->epoch), *s->epoch);
    }
  }
  // Left uninitialized: the answer fills it. Zeroing a set's worth of fresh buffers first
  // doubled the system time of a first epoch from an object store (bench/results/s3.md).
  const std::size_t size = group.back()->end() - first;
  const auto range = url(group.front()->object) + ": a range at " + std::to_string(first);
  if (auto fits = fits_in_memory(size, range); !fits) {  // a size from the store's listing
    settle(group, nullptr, first, std::move(fits).error());
    return;
  }
  auto bytes = fault_light_buffer(size);
  if (!bytes) {
    settle(group, nullptr, first,
           error{errc::io_error,
                 range + ": out of memory for its " + std::to_string(size) + " bytes"});
    return;
  }
  // The last is settled once the request is counted: a reader that has read every range has
  // seen every request in the counters.
  std::size_t settled = 0;
  auto arrived = [&](std::uint64_t received) {
    std::size_t upto = settled;
    while (upto + 1 < group.size() && group[upto]->end() <= first + received) {
      ++upto;
    }
    if (upto > settled) {
      settle({group.begin() + settled, group.begin() + upto}, bytes, first, std::nullopt);
      settled = upto;
    }
  };
  const auto began = std::chrono::steady_clock::now();
  auto got = client.get_range(bucket_, objects_[group.front()->object].key, first, size,
                              bytes.get(), arrived);
  counters_->served(epoch, size, began, std::chrono::steady_clock::now());
  std::optional<error> failed;
  if (!got) {
    failed = std::move(got).error();
  }
  settle({group.begin() + settled, group.end()}, bytes, first, failed);
}

void remote_store::settle(const std::vector<std::shared_ptr<slot>>& slots,
                          const std::shared_ptr<const std::uint8_t[]>& bytes, std::uint64_t first,
                          const std::optional<error>& failed) {
  if (slots.empty()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : slots) {
    if (s->done) {
      continue;
    }
    if (failed) {
      s->failure = *failed;
    } else {
      s->bytes = bytes;
      s->at = static_cast<std::size_t>(s->offset - first);
    }
    s->done = true;
  }
  settled_.notify_all();
}

}  // namespace conveyor

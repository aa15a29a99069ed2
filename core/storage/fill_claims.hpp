#pragma once
/// Which samples are being read from storage to fill a cache, and by whom: the thread that
/// claims a sample reads it, and any other thread that asks for the same sample meanwhile
/// waits for that read instead of making its own (a node's readers and its peer server's
/// workers ask at once when the nodes' epochs drift apart). So a cached sample is read from
/// storage once. Bounded: a thread waits for another's claim only until its deadline, and then
/// goes on without one (a second read, never a stall).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <unordered_set>

namespace conveyor {

/// Thread-safe.
class fill_claims {
 public:
  using clock = std::chrono::steady_clock;

  /// A sample's claim, held by one thread; released (waking those that wait) when destroyed.
  /// Empty (`held()` false) when the deadline passed while another thread held it.
  class claim {
   public:
    claim() = default;
    claim(claim&& other) noexcept;
    claim& operator=(claim&& other) noexcept;
    claim(const claim&) = delete;
    claim& operator=(const claim&) = delete;
    ~claim();

    bool held() const noexcept { return owner_ != nullptr; }

   private:
    friend class fill_claims;
    claim(fill_claims* owner, std::uint64_t id) : owner_(owner), id_(id) {}
    void release() noexcept;

    fill_claims* owner_ = nullptr;
    std::uint64_t id_ = 0;
  };

  /// Sample `id`'s claim: at once when nobody holds it, else once its holder releases it, or
  /// an empty claim when `deadline` comes first. Claims outlive no fill_claims.
  claim take(std::uint64_t id, clock::time_point deadline);

  /// How many threads wait for a claim now (for tests: they can tell that a thread waits).
  std::size_t waiting() const;

 private:
  void release(std::uint64_t id) noexcept;

  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::unordered_set<std::uint64_t> held_;
  std::size_t waiting_ = 0;
};

}  // namespace conveyor

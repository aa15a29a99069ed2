#pragma once
/// A test's hold on a host engine's queue: work queued on the engine after hold() runs only
/// once the test calls open(), so a test decides when queued work (and an injected fault in
/// it) runs, whatever the threads' timing.

#include <future>
#include <memory>
#include <vector>

#include "core/feeding/copy_engine.hpp"
#include "core/feeding/host_stream.hpp"

namespace conveyor::testing {

/// Not thread-safe: one test thread uses it. Declare it after the engines it holds: its end
/// opens it.
class stream_gate {
 public:
  stream_gate() {
    stream_.enqueue([opened = open_.get_future().share()]() -> expected<void> {
      opened.wait();
      return {};
    });
  }
  ~stream_gate() { open(); }
  stream_gate(const stream_gate&) = delete;
  stream_gate& operator=(const stream_gate&) = delete;

  /// `engine`'s queue waits for the gate: what is queued on it from now on runs after open().
  expected<void> hold(copy_engine& engine) {
    auto event = engine.create_event();
    if (!event) {
      return std::move(event).error();
    }
    if (auto ok = engine.record_on(**event, consumer_stream{&stream_}); !ok) {
      return ok;
    }
    if (auto ok = engine.wait_for(**event); !ok) {
      return ok;
    }
    events_.push_back(std::move(*event));
    return {};
  }

  /// Lets the held work run; idempotent.
  void open() {
    if (!opened_) {
      opened_ = true;
      open_.set_value();
    }
  }

 private:
  std::promise<void> open_;
  bool opened_ = false;
  std::vector<std::unique_ptr<engine_event>> events_;
  host_stream stream_{"gate", host_stream::mode::threaded};  // last: stops first, once open
};

}  // namespace conveyor::testing

#include "core/feeding/slot_ring.hpp"

#include "core/base/deliberate_leak.hpp"
#include "core/base/log.hpp"
#include "core/feeding/deferred_teardown.hpp"
#include "core/transforms/normalize_batch.hpp"

namespace conveyor {
namespace {

/// Grows `buffer` to at least `bytes` with `allocate`; a larger batch than any before costs one
/// reallocation (the old buffer is freed first: the two need not fit together).
template <class Allocate>
expected<void> grow(engine_buffer& buffer, std::size_t bytes, Allocate allocate) {
  if (buffer.size >= bytes) {
    return {};
  }
  buffer = {};
  auto fresh = allocate(bytes);
  if (!fresh) {
    return std::move(fresh).error();
  }
  buffer = std::move(*fresh);
  return {};
}

/// Keeps `buffer`'s memory for ever: device work that may still use it did not complete.
void leak(engine_buffer& buffer) {
  if (buffer.memory) {
    leak_for_ever(std::move(buffer.memory));
  }
}

}  // namespace

expected<std::shared_ptr<slot_ring>> slot_ring::create(std::shared_ptr<copy_engine> engine,
                                                       ring_options options) {
  const std::string who = options.name + " on the " + engine->name();
  if (options.slots == 0) {
    return error{errc::invalid_argument, who + ": needs at least one slot"};
  }
  if (options.normalize && options.normalized_type != dtype::float32 &&
      options.normalized_type != dtype::bfloat16) {
    return error{errc::invalid_argument, who + ": normalize writes float32 or bfloat16, not " +
                                             std::string(name_of(options.normalized_type))};
  }
  const auto& external = options.host_memory.buffers;
  if (!external.empty() && external.size() != options.slots) {
    return error{errc::invalid_argument, who + ": " + std::to_string(external.size()) +
                                             " external slots for a ring of " +
                                             std::to_string(options.slots)};
  }
  std::shared_ptr<slot_ring> ring(new slot_ring(std::move(engine), std::move(options)));
  const auto& memory = ring->options_.host_memory;
  for (std::size_t i = 0; i < ring->options_.slots; ++i) {
    auto slot = std::make_unique<ring_slot>();
    slot->index_ = i;
    for (auto* event : {&slot->copied_, &slot->done_, &slot->released_}) {
      auto made = ring->engine_->create_event();
      if (!made) {
        return std::move(made).error();
      }
      *event = std::move(*made);
    }
    if (!memory.buffers.empty()) {
      slot->host_data_ = memory.buffers[i];
    }
    ring->slots_.push_back(std::move(slot));
    ring->free_.push_back(i);
  }
  return ring;
}

slot_ring::slot_ring(std::shared_ptr<copy_engine> engine, ring_options options)
    : engine_(std::move(engine)),
      options_(std::move(options)),
      completions_(*engine_, [this](const completion_queue::entry& e, const error& why) {
        fail(failure(e.what, why));
      }) {}

slot_ring::~slot_ring() {
  stop();
  tear_down();
}

namespace {

/// What a ring leaves behind: its slots (buffers and events) and the engine they belong to
/// (declared first: it goes last), with a marker recorded behind the engine's queued work.
struct ring_remains {
  std::shared_ptr<copy_engine> engine;
  std::vector<std::unique_ptr<ring_slot>> slots;
  std::unique_ptr<engine_event> queue_done;
};

}  // namespace

// The buffers go once the trainers' recorded work and the engine's queue have completed: now
// when they have, else on the teardown thread, which leaks them if that does not happen within
// the deadline.
void slot_ring::tear_down() {
  auto remains = std::make_shared<ring_remains>();
  remains->engine = engine_;
  remains->slots = std::move(slots_);
  std::optional<error> unmarked;
  if (auto marker = engine_->create_event(); !marker) {
    unmarked = marker.error();
  } else if (auto ok = engine_->record(**marker); !ok) {
    unmarked = ok.error();
  } else {
    remains->queue_done = std::move(*marker);
  }
  deferred_teardown t;
  t.what = options_.name + "'s slots on the " + engine_->name();
  t.deadline = deferred_teardown::clock::now() + options_.deadline;
  t.settled = [r = remains.get(), unmarked]() -> expected<bool> {
    if (unmarked) {
      return *unmarked;
    }
    for (auto& slot : r->slots) {
      if (slot->consumer_pending_) {
        auto done = r->engine->query(*slot->released_);
        if (!done || !*done) {
          return done;
        }
      }
    }
    return r->engine->query(*r->queue_done);
  };
  t.leak = [r = remains.get()] {
    for (auto& slot : r->slots) {
      leak(slot->host_);
      leak(slot->input_);
      leak(slot->result_);
    }
  };
  t.resources = std::move(remains);
  if (auto done = t.settled(); done && *done) {
    return;  // the remains go with `t`, here
  }
  defer_teardown(std::move(t));
}

void slot_ring::stop() {
  completions_.stop();
  std::function<void(const error&)> dropped;  // outside the lock: it may own what owns us
  std::lock_guard<std::mutex> lock(failure_mutex_);
  dropped.swap(options_.on_failure);
}

error slot_ring::failure(const std::string& what, const error& why) const {
  auto code = why.code() == errc::timed_out ? errc::timed_out : errc::device_error;
  return error{code,
               options_.name + ": " + what + " on the " + engine_->name() + ": " + why.message()};
}

void slot_ring::fail(const error& why) {
  std::function<void(const error&)> handler;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    handler = std::move(options_.on_failure);
    options_.on_failure = nullptr;
  }
  if (handler) {
    handler(why);
  } else {
    log("feeder")->error("{}", why.what());
  }
}

expected<void> slot_ring::check(const batch_layout& layout) const {
  auto misuse = [&](const std::string& what) {
    return error{errc::invalid_argument,
                 options_.name + " on the " + engine_->name() + ": " + what};
  };
  if (layout.bytes == 0) {
    return {};  // an end-of-epoch marker: nothing to copy
  }
  if (options_.normalize) {
    if (layout.images.samples <= 0) {
      return misuse("normalize on the device needs the batch's images (uint8, from to_uint8)");
    }
    if (layout.images_offset +
            layout.images.sample_elements() * static_cast<std::size_t>(layout.images.samples) >
        layout.bytes) {
      return misuse("the images run past the batch's buffer");
    }
    auto ok = check_normalize_batch(layout.images, options_.normalized_type);
    return ok ? ok : misuse(ok.error().message());
  }
  return {};
}

expected<engine_buffer> slot_ring::allocate(memory_kind kind, std::size_t bytes) {
  return kind == memory_kind::host ? engine_->allocate_host(bytes)
                                   : engine_->allocate_device(bytes);
}

expected<void> slot_ring::reserve(ring_slot& slot, const batch_layout& layout) {
  const auto bytes = layout.bytes;
  const auto& external = options_.host_memory;
  if (!external.buffers.empty()) {
    if (bytes > external.capacity) {
      return error{errc::invalid_config, options_.name + ": a batch of " + std::to_string(bytes) +
                                             " bytes does not fit the slot's " +
                                             std::to_string(external.capacity) +
                                             " bytes (the feed was laid out for other fields)"};
    }
  } else {
    auto host = [this](std::size_t n) { return allocate(memory_kind::host, n); };
    if (auto ok = grow(slot.host_, bytes, host); !ok) {
      return ok;
    }
    slot.host_data_ = slot.host_.data();
  }
  if (auto ok = retire_device_memory(slot, layout); !ok) {
    return ok;
  }
  auto device = [this](std::size_t n) { return allocate(memory_kind::device, n); };
  if (!engine_->in_place()) {
    if (auto ok = grow(slot.input_, bytes, device); !ok) {
      return ok;
    }
  }
  if (options_.normalize) {
    auto result_bytes = layout.images.elements() * size_of(options_.normalized_type);
    return grow(slot.result_, result_bytes, device);
  }
  return {};
}

// Before a slot's device memory grows (the old buffer is freed), the trainer's work on the
// slot's last batch must have completed: it may still read that memory, on this device or a
// peer. Growth is rare (a batch larger than any before), so the feeder waits for it here,
// within the deadline; past it, the old memory is leaked rather than freed under that work.
expected<void> slot_ring::retire_device_memory(ring_slot& slot, const batch_layout& layout) {
  const bool input_grows = !engine_->in_place() && slot.input_.size < layout.bytes;
  const bool result_grows =
      options_.normalize &&
      slot.result_.size < layout.images.elements() * size_of(options_.normalized_type);
  if (!slot.consumer_pending_ || !(input_grows || result_grows)) {
    return {};
  }
  auto complete =
      engine_->wait_until(*slot.released_, copy_engine::clock::now() + options_.deadline);
  if (!complete) {
    return std::move(complete).error();
  }
  if (*complete) {
    slot.consumer_pending_ = false;
    return {};
  }
  log("feeder")->error(
      "{}: the trainer's work on slot {} did not complete within {} s: its device memory is "
      "leaked rather than freed under that work, and the slot grows in new memory",
      options_.name, slot.index_, std::chrono::duration<double>(options_.deadline).count());
  leak(slot.input_);
  leak(slot.result_);
  return {};
}

slot_output slot_ring::output_of(const ring_slot& slot) const {
  const auto& l = slot.layout_;
  slot_output out;
  out.device = engine_->device();
  out.normalized_type = options_.normalized_type;
  if (l.bytes > 0) {
    out.data = engine_->in_place() ? slot.host_data_ : slot.input_.data();
    out.normalized = options_.normalize ? slot.result_.data() : nullptr;
  }
  return out;
}

// Before the host writes a slot again: its last copy has read the host buffer and, where the
// trainer reads that buffer itself (in place), the trainer's work on it has completed.
expected<void> slot_ring::reusable(ring_slot& slot) {
  const auto deadline = copy_engine::clock::now() + options_.deadline;
  auto wait = [&](const engine_event& e, const std::string& what) -> expected<void> {
    auto complete = engine_->wait_until(e, deadline);
    if (!complete) {
      return failure(slot.what_, complete.error());
    }
    if (!*complete) {
      return error{errc::timed_out,
                   options_.name + ": " + slot.what_ + ": " + what + " did not complete within " +
                       std::to_string(std::chrono::duration<double>(options_.deadline).count()) +
                       " s"};
    }
    return {};
  };
  if (auto ok = wait(*slot.copied_, "the previous copy from its host buffer"); !ok) {
    return ok;
  }
  if (engine_->in_place() && slot.consumer_pending_) {
    if (auto ok = wait(*slot.released_, "the trainer's work on its released batch"); !ok) {
      return ok;
    }
    slot.consumer_pending_ = false;
  }
  return {};
}

expected<ring_slot*> slot_ring::acquire(const batch_layout& layout, const std::string& what) {
  if (free_.empty()) {
    return error{errc::invalid_argument,
                 options_.name + ": no free slot (a batch came without a credit)"};
  }
  if (auto ok = check(layout); !ok) {
    return std::move(ok).error();
  }
  // A device slot released longest ago has had the most time for the trainer's work on it
  // (the copy waits for that on the device); host memory read in place is released when that
  // work is done, and the slot released last is the one still in the caches.
  const bool newest = engine_->in_place();
  auto& slot = *slots_[newest ? free_.back() : free_.front()];
  slot.what_ = what + " (slot " + std::to_string(slot.index_) + ")";
  if (auto ok = reusable(slot); !ok) {
    return std::move(ok).error();
  }
  if (auto ok = reserve(slot, layout); !ok) {
    return ok.error().code() == errc::invalid_config ? std::move(ok).error()
                                                     : failure(slot.what_, ok.error());
  }
  if (newest) {
    free_.pop_back();
  } else {
    free_.pop_front();
  }
  slot.layout_ = layout;
  slot.output_ = output_of(slot);
  slot.state_ = ring_slot::state::writing;
  return &slot;
}

// The slot's device work, in stream order: wait for the trainer's release of the slot's
// previous batch, copy, normalize, mark complete.
expected<void> slot_ring::enqueue_work(ring_slot& slot) {
  const auto bytes = slot.layout_.bytes;
  const std::uint8_t* input = slot.host_data_;
  if (!engine_->in_place()) {
    if (slot.consumer_pending_.exchange(false)) {
      if (auto ok = engine_->wait_for(*slot.released_); !ok) {
        return ok;
      }
    }
    if (bytes > 0) {
      if (auto ok = engine_->copy_to_device(slot.input_.data(), slot.host_data_, bytes); !ok) {
        return ok;
      }
    }
    if (auto ok = engine_->record(*slot.copied_); !ok) {
      return ok;
    }
    input = slot.input_.data();
  }
  if (options_.normalize && bytes > 0) {
    auto ok =
        engine_->normalize(input + slot.layout_.images_offset, slot.layout_.images,
                           *options_.normalize, options_.normalized_type, slot.result_.data());
    if (!ok) {
      return ok;
    }
  }
  return engine_->record(*slot.done_);
}

expected<void> slot_ring::submit(ring_slot& slot, std::function<void()> on_ready) {
  if (slot.state_ != ring_slot::state::writing) {
    return error{errc::invalid_argument, options_.name + ": submit of slot " +
                                             std::to_string(slot.index_) +
                                             ", which was not acquired"};
  }
  if (auto ok = enqueue_work(slot); !ok) {
    return failure(slot.what_, ok.error());
  }
  slot.state_ = ring_slot::state::in_use;
  completion_queue::entry e;
  e.done = slot.done_.get();
  e.timeout = options_.deadline;
  e.what = slot.what_;
  e.on_ready = std::move(on_ready);
  completions_.push(std::move(e));
  return {};
}

void slot_ring::released(std::uint64_t index, consumer_stream stream) noexcept {
  if (index >= slots_.size()) {
    return;
  }
  auto& slot = *slots_[index];
  auto ok = engine_->record_on(*slot.released_, stream);
  if (ok) {
    slot.consumer_pending_ = true;
    return;
  }
  slot.poisoned_ = true;
  try {
    fail(failure("the release of " + slot.what_ +
                     " (its memory is never reused: it could not be ordered after the "
                     "trainer's work)",
                 ok.error()));
  } catch (...) {  // NOLINT(bugprone-empty-catch): released() must not throw into a destructor
  }
}

expected<void> slot_ring::reclaim(std::size_t index) {
  if (index >= slots_.size() || slots_[index]->state_ != ring_slot::state::in_use ||
      slots_[index]->poisoned_) {
    return error{errc::invalid_argument, options_.name + ": release of slot " +
                                             std::to_string(index) +
                                             ", which is not in use (or is poisoned)"};
  }
  slots_[index]->state_ = ring_slot::state::free;
  free_.push_back(index);
  return {};
}

}  // namespace conveyor

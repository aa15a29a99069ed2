#include "core/feeding/host_copy_engine.hpp"

#include <cstring>
#include <new>

#include <sys/mman.h>

#include "core/transforms/normalize_batch.hpp"

namespace conveyor {
namespace {

/// The state behind a host engine's event.
class host_event final : public engine_event {
 public:
  std::shared_ptr<host_event_state> state = std::make_shared<host_event_state>();
};

const host_event_state& state_of(const engine_event& e) {
  return *static_cast<const host_event&>(e).state;
}
std::shared_ptr<host_event_state> shared_state_of(const engine_event& e) {
  return static_cast<const host_event&>(e).state;
}

/// A slot's memory: a private mapping of whole 2 MiB pages, with transparent huge pages asked
/// for (a 64 x 224 x 224 x 3 float batch is 38 MB: 20 page faults on first touch instead of
/// 9,400, and fewer TLB misses while samples are written and read). Where the kernel gives
/// only small pages, the same mapping with them.
engine_buffer host_memory(std::size_t bytes) {
  if (bytes == 0) {
    return {};
  }
  constexpr std::size_t huge_page = std::size_t{2} << 20;
  const std::size_t length = (bytes + huge_page - 1) / huge_page * huge_page;
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::bad_alloc();  // as new[] did
  }
  (void)madvise(p, length, MADV_HUGEPAGE);  // advice: small pages where it is refused
  return {std::shared_ptr<std::uint8_t>(static_cast<std::uint8_t*>(p),
                                        [length](std::uint8_t* q) { munmap(q, length); }),
          bytes};
}

}  // namespace

expected<std::shared_ptr<host_copy_engine>> host_copy_engine::create(host_engine_options options) {
  if (!options.threaded && options.faults.any()) {
    return error{errc::invalid_argument,
                 "host engine: faults and delays need a threaded engine (inline work runs on "
                 "the feeder's thread)"};
  }
  return std::shared_ptr<host_copy_engine>(new host_copy_engine(options));
}

expected<std::shared_ptr<copy_engine>> make_host_engine(host_engine_options options) {
  auto engine = host_copy_engine::create(options);
  if (!engine) {
    return std::move(engine).error();
  }
  return std::shared_ptr<copy_engine>(std::move(*engine));
}

host_copy_engine::host_copy_engine(host_engine_options options)
    : options_(options),
      stream_("host engine",
              options.threaded ? host_stream::mode::threaded : host_stream::mode::run_inline) {}

expected<void> host_copy_engine::usable() const {
  if (auto failed = stream_.failure()) {
    return *failed;
  }
  return {};
}

expected<engine_buffer> host_copy_engine::allocate_host(std::size_t bytes) {
  return host_memory(bytes);
}

expected<engine_buffer> host_copy_engine::allocate_device(std::size_t bytes) {
  return host_memory(bytes);
}

expected<std::unique_ptr<engine_event>> host_copy_engine::create_event() {
  return std::unique_ptr<engine_event>(std::make_unique<host_event>());
}

expected<void> host_copy_engine::copy(std::uint64_t number, std::uint8_t* dst,
                                      const std::uint8_t* src, std::size_t bytes) {
  const auto& faults = options_.faults;
  if (number == faults.stall_copy) {
    stream_.pause(std::nullopt);  // until the engine is destroyed
    return error{errc::device_error, "host engine: copy " + std::to_string(number) +
                                         " stalled (injected) until the engine was destroyed"};
  }
  if (faults.copy_delay.count() > 0 && !stream_.pause(faults.copy_delay)) {
    return error{errc::device_error,
                 "host engine: destroyed during copy " + std::to_string(number)};
  }
  if (number == faults.fail_copy) {
    return error{errc::device_error, "host engine: copy " + std::to_string(number) + " of " +
                                         std::to_string(bytes) + " bytes failed (injected fault)"};
  }
  std::memcpy(dst, src, bytes);
  return {};
}

expected<void> host_copy_engine::copy_to_device(std::uint8_t* dst, const std::uint8_t* src,
                                                std::size_t bytes) {
  if (auto ok = usable(); !ok) {
    return ok;
  }
  const auto number = ++copies_;
  stream_.enqueue([this, number, dst, src, bytes] { return copy(number, dst, src, bytes); });
  return {};
}

expected<void> host_copy_engine::normalize(const std::uint8_t* src, const uint8_batch_shape& shape,
                                           const normalize_coefficients& k, dtype out, void* dst) {
  if (auto ok = usable(); !ok) {
    return ok;
  }
  stream_.enqueue([=] { return normalize_batch(src, shape, k, out, dst); });
  return {};
}

expected<void> host_copy_engine::wait_for(const engine_event& e) {
  if (auto ok = usable(); !ok) {
    return ok;
  }
  auto state = shared_state_of(e);
  const auto record = state->latest();
  stream_.enqueue_wait(std::move(state), record);
  return {};
}

expected<void> host_copy_engine::record(engine_event& e) {
  if (auto ok = usable(); !ok) {
    return ok;
  }
  auto state = shared_state_of(e);
  const auto record = state->arm();
  stream_.enqueue_record(std::move(state), record);
  return {};
}

expected<void> host_copy_engine::record_on(engine_event& e, consumer_stream stream) {
  auto state = shared_state_of(e);
  const auto record = state->arm();
  if (stream.handle == nullptr) {
    state->complete(record);
  } else {
    static_cast<host_stream*>(stream.handle)->enqueue_record(std::move(state), record);
  }
  return {};
}

expected<bool> host_copy_engine::query(const engine_event& e) {
  if (auto ok = usable(); !ok) {
    return std::move(ok).error();
  }
  const auto& state = state_of(e);
  return state.done(state.latest());
}

expected<bool> host_copy_engine::wait_until(const engine_event& e, clock::time_point deadline) {
  if (auto ok = usable(); !ok) {
    return std::move(ok).error();
  }
  const auto& state = state_of(e);
  return state.wait_until(state.latest(), deadline);
}

}  // namespace conveyor

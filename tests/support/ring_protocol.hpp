#pragma once
/// The protocol of a feeder's ring of slots (core/feeding/slot_ring.hpp), as typed tests that
/// run against any copy engine: a test file instantiates them with an engine kit, which gives
/// the engine and a simulated trainer of that device. tests/test_slot_ring.cpp runs them with
/// the host engine on every machine; tests/cuda/test_cuda_slot_ring.cpp with the CUDA engine
/// where there is a GPU.
///
/// A kit has: engine() (a fresh engine); trainer() (the trainer's stream); read_later(data,
/// bytes, delay) (queues on the trainer's stream a kernel that waits `delay`, then copies
/// `bytes` of batch memory at `data` into a snapshot); snapshots() (every snapshot, in order,
/// once the trainer's stream has run them); read_now(data, bytes) (batch memory copied out
/// now); and unavailable() (why the kit cannot run here, e.g. no GPU).

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/feeding/slot_ring.hpp"
#include "core/transforms/normalize_batch.hpp"
#include "ring_log.hpp"

namespace conveyor::testing {

template <class Kit>
class RingProtocol : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = kit_.unavailable()) {
      GTEST_SKIP() << *why;
    }
  }

  std::shared_ptr<slot_ring> make_ring(std::size_t slots,
                                       std::optional<normalize_coefficients> normalize = {},
                                       dtype out = dtype::float32) {
    ring_options r;
    r.name = "feeder 0";
    r.slots = slots;
    r.normalize = normalize;
    r.normalized_type = out;
    r.on_failure = [log = log_](const error& e) { log->failed(e); };
    auto ring = slot_ring::create(kit_.engine(), std::move(r));
    EXPECT_TRUE(ring) << ring.error().what();
    return ring ? *ring : nullptr;
  }

  /// Acquires a slot for `layout`, fills every byte of it with `value` (or `fill`), submits it
  /// as batch `number`; returns the slot.
  ring_slot* feed(slot_ring& ring, int number, std::uint8_t value,
                  const batch_layout& layout = small_layout()) {
    auto slot = ring.acquire(layout, "batch " + std::to_string(number));
    EXPECT_TRUE(slot) << slot.error().what();
    if (!slot) {
      return nullptr;
    }
    auto* bytes = (*slot)->host();
    std::fill(bytes, bytes + layout.bytes, value);
    auto ok = ring.submit(**slot, [log = log_, number] { log->handed_over(number); });
    EXPECT_TRUE(ok) << ok.error().what();
    return *slot;
  }

  /// Every byte of `got` is `value`.
  static bool all_are(const std::vector<std::uint8_t>& got, std::uint8_t value) {
    return !got.empty() && std::all_of(got.begin(), got.end(), [&](auto b) { return b == value; });
  }

  Kit kit_;
  std::shared_ptr<ring_log> log_ = std::make_shared<ring_log>();
};

TYPED_TEST_SUITE_P(RingProtocol);

// Defect 1 of issue 14: the next copy into a slot must wait for the trainer's work on the
// batch it held, which is still running when the trainer releases it. Each batch is read by a
// trainer kernel that starts late; the ring is small, so every slot is written again while
// that read is pending.
TYPED_TEST_P(RingProtocol, ReuseNeverOvertakesTheTrainersRelease) {
  auto ring = this->make_ring(2);
  ASSERT_TRUE(ring);
  const auto bytes = small_layout().bytes;
  std::vector<std::size_t> held;  // slots handed over, oldest first
  int retired = 0;
  auto retire_oldest = [&] {
    ASSERT_TRUE(this->log_->wait_for_batches(static_cast<std::size_t>(retired) + 1));
    auto& slot = ring->slot(held.front());
    this->kit_.read_later(slot.output().data, bytes, std::chrono::milliseconds(40));
    ring->released(held.front(), this->kit_.trainer());  // the read is still to run
    ASSERT_TRUE(ring->reclaim(held.front()));
    held.erase(held.begin());
    ++retired;
  };
  const int batches = 6;
  for (int b = 0; b < batches; ++b) {
    if (ring->free_slots() == 0) {
      retire_oldest();
    }
    auto* slot = this->feed(*ring, b, static_cast<std::uint8_t>(b + 1));
    ASSERT_NE(slot, nullptr);
    held.push_back(slot->index());
  }
  while (!held.empty()) {
    retire_oldest();
  }
  auto seen = this->kit_.snapshots();
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    EXPECT_TRUE(this->all_are(seen[static_cast<std::size_t>(b)], static_cast<std::uint8_t>(b + 1)))
        << "the trainer's read of batch " << b << " saw another batch's bytes";
  }
  EXPECT_EQ(this->log_->failures(), 0u);
}

// Defect 2 of issue 14: a batch the trainer holds stays readable after its feeder is gone, and
// the memory is freed only after the trainer's work on it completed.
TYPED_TEST_P(RingProtocol, AHeldBatchOutlivesItsFeeder) {
  auto ring = this->make_ring(2);
  ASSERT_TRUE(ring);
  auto* slot = this->feed(*ring, 0, 7);
  ASSERT_NE(slot, nullptr);
  ASSERT_TRUE(this->log_->wait_for_batches(1));
  const auto index = slot->index();
  const auto out = slot->output();
  const auto bytes = small_layout().bytes;
  std::shared_ptr<slot_owner> held = ring;  // what a handed-out batch keeps
  ring->stop();                             // the feeder exits...
  ring.reset();                             // ...and lets go
  EXPECT_TRUE(this->all_are(this->kit_.read_now(out.data, bytes), 7));
  this->kit_.read_later(out.data, bytes, std::chrono::milliseconds(40));
  held->released(index, this->kit_.trainer());
  held.reset();  // the last owner: frees the memory once the trainer's read has run
  auto seen = this->kit_.snapshots();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(this->all_are(seen.front(), 7));
}

TYPED_TEST_P(RingProtocol, BatchesAreHandedOverInOrderWithTheirBytes) {
  auto ring = this->make_ring(4);
  ASSERT_TRUE(ring);
  std::vector<slot_output> outputs;
  for (int b = 0; b < 3; ++b) {
    auto* slot = this->feed(*ring, b, static_cast<std::uint8_t>(10 * (b + 1)));
    ASSERT_NE(slot, nullptr);
    outputs.push_back(slot->output());
  }
  auto* marker = this->feed(*ring, 3, 0, small_layout(0));  // the end of an epoch: no samples
  ASSERT_NE(marker, nullptr);
  ASSERT_TRUE(this->log_->wait_for_batches(4));
  EXPECT_EQ(this->log_->batches(), (std::vector<int>{0, 1, 2, 3}));
  for (std::size_t b = 0; b < outputs.size(); ++b) {
    EXPECT_EQ(outputs[b].normalized, nullptr) << "nothing normalised";
    EXPECT_EQ(outputs[b].device, ring->engine().device());
    EXPECT_TRUE(this->all_are(this->kit_.read_now(outputs[b].data, small_layout().bytes),
                              static_cast<std::uint8_t>(10 * (b + 1))));
  }
  EXPECT_EQ(marker->output().data, nullptr);
}

TYPED_TEST_P(RingProtocol, NormalizeGivesTheCpuReference) {
  const auto k = coefficients_of(normalize_spec{});
  for (auto out : {dtype::float32, dtype::bfloat16}) {
    auto ring = this->make_ring(1, k, out);
    ASSERT_TRUE(ring);
    const auto layout = small_layout();
    auto slot = ring->acquire(layout, "batch 0");
    ASSERT_TRUE(slot) << slot.error().what();
    std::vector<std::uint8_t> input(layout.bytes);
    for (std::size_t i = 0; i < input.size(); ++i) {
      input[i] = static_cast<std::uint8_t>(i * 37 + 5);
    }
    std::copy(input.begin(), input.end(), (*slot)->host());
    ASSERT_TRUE(ring->submit(**slot, [log = this->log_] { log->handed_over(0); }));
    ASSERT_TRUE(this->log_->wait_for_batches(1));
    std::vector<std::uint8_t> want(layout.images.elements() * size_of(out));
    ASSERT_TRUE(normalize_batch(input.data(), layout.images, k, out, want.data()));
    EXPECT_EQ((*slot)->output().normalized_type, out);
    EXPECT_EQ(
        this->kit_.read_now(static_cast<std::uint8_t*>((*slot)->output().normalized), want.size()),
        want)
        << name_of(out);
    this->log_ = std::make_shared<ring_log>();
  }
}

TYPED_TEST_P(RingProtocol, ASlotGrowsForALargerBatch) {
  auto ring = this->make_ring(1);
  ASSERT_TRUE(ring);
  auto* slot = this->feed(*ring, 0, 1, small_layout(1));
  ASSERT_NE(slot, nullptr);
  ASSERT_TRUE(this->log_->wait_for_batches(1));
  ring->released(slot->index(), this->kit_.trainer());
  ASSERT_TRUE(ring->reclaim(slot->index()));
  slot = this->feed(*ring, 1, 2, small_layout(8));
  ASSERT_NE(slot, nullptr);
  ASSERT_TRUE(this->log_->wait_for_batches(2));
  EXPECT_TRUE(this->all_are(this->kit_.read_now(slot->output().data, small_layout(8).bytes), 2));
}

// Issue 34: device memory that grows for a larger batch was freed at once, while the trainer's
// released work on the slot's last batch might still read it. The growth must wait for it.
TYPED_TEST_P(RingProtocol, GrowthFreesTheOldMemoryOnlyAfterTheTrainersWorkOnIt) {
  auto ring = this->make_ring(1);
  ASSERT_TRUE(ring);
  auto* slot = this->feed(*ring, 0, 5, small_layout(1));
  ASSERT_NE(slot, nullptr);
  ASSERT_TRUE(this->log_->wait_for_batches(1));
  this->kit_.read_later(slot->output().data, small_layout(1).bytes, std::chrono::milliseconds(40));
  ring->released(slot->index(), this->kit_.trainer());  // the read is still to run
  ASSERT_TRUE(ring->reclaim(slot->index()));
  ASSERT_NE(this->feed(*ring, 1, 6, small_layout(8)), nullptr);  // grows into new memory
  ASSERT_TRUE(this->log_->wait_for_batches(2));
  auto seen = this->kit_.snapshots();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(this->all_are(seen.front(), 5)) << "the trainer read memory freed under it";
  EXPECT_EQ(this->log_->failures(), 0u);
}

TYPED_TEST_P(RingProtocol, MisuseIsRefusedWithAnError) {
  auto engine = this->kit_.engine();
  ring_options none;
  none.slots = 0;
  EXPECT_EQ(slot_ring::create(engine, none).error().code(), errc::invalid_argument);
  ring_options int_out;
  int_out.normalize = coefficients_of(normalize_spec{});
  int_out.normalized_type = dtype::uint8;
  EXPECT_EQ(slot_ring::create(engine, int_out).error().code(), errc::invalid_argument);

  auto ring = this->make_ring(1, coefficients_of(normalize_spec{}));
  ASSERT_TRUE(ring);
  auto no_images = ring->acquire({240, 0, {}}, "batch 0");
  ASSERT_FALSE(no_images);
  EXPECT_NE(no_images.error().message().find("images (uint8"), std::string::npos)
      << no_images.error().what();
  auto past_the_end = ring->acquire({60, 10, {1, 3, 4, 5, pixel_layout::chw}}, "batch 0");
  ASSERT_FALSE(past_the_end);
  EXPECT_NE(past_the_end.error().message().find("run past"), std::string::npos)
      << past_the_end.error().what();
  EXPECT_FALSE(ring->reclaim(0)) << "a free slot is not in use";
  auto* slot = this->feed(*ring, 0, 3);
  ASSERT_NE(slot, nullptr);
  auto none_free = ring->acquire(small_layout(), "batch 1");
  ASSERT_FALSE(none_free);
  EXPECT_NE(none_free.error().message().find("without a credit"), std::string::npos);
  EXPECT_FALSE(ring->submit(*slot, [] {})) << "submitted already";
  ASSERT_TRUE(this->log_->wait_for_batches(1));
  ASSERT_TRUE(ring->reclaim(slot->index()));
  EXPECT_FALSE(ring->reclaim(slot->index())) << "a second release of one slot";
}

REGISTER_TYPED_TEST_SUITE_P(RingProtocol, ReuseNeverOvertakesTheTrainersRelease,
                            AHeldBatchOutlivesItsFeeder, BatchesAreHandedOverInOrderWithTheirBytes,
                            NormalizeGivesTheCpuReference, ASlotGrowsForALargerBatch,
                            GrowthFreesTheOldMemoryOnlyAfterTheTrainersWorkOnIt,
                            MisuseIsRefusedWithAnError);

}  // namespace conveyor::testing

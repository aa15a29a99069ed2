// The ring of slots behind every feeder, over the host engine: the protocol tests shared with
// the CUDA engine (support/ring_protocol.hpp) run here with the threaded engine (copies and
// normalize on the engine's thread, as a GPU's stream runs them) and with the host feeder's own
// (inline, in place); then what only an injectable engine can show: a fault or a stall of the
// device's work surfaces as an error naming the batch, within the deadline, and nothing waits
// for ever.
#include <gtest/gtest.h>

#include <future>

#include "core/feeding/deferred_teardown.hpp"
#include "support/host_kit.hpp"
#include "support/stream_gate.hpp"

namespace conveyor::testing {

using host_kits = ::testing::Types<threaded_host_kit, in_place_host_kit>;
INSTANTIATE_TYPED_TEST_SUITE_P(HostEngine, RingProtocol, host_kits);
INSTANTIATE_TYPED_TEST_SUITE_P(HostEngine, RingFault, host_kits);

namespace {

class RingFaults : public ::testing::Test {
 protected:
  // A ring over an engine with `faults`; its engine's queue held by `held` when given.
  std::shared_ptr<slot_ring> make_ring(
      host_engine_faults faults, std::chrono::milliseconds deadline = std::chrono::seconds(30),
      stream_gate* held = nullptr) {
    ring_options r;
    r.name = "feeder 0";
    r.slots = 3;
    r.deadline = deadline;
    r.on_failure = [log = log_](const error& e) { log->failed(e); };
    auto engine = kit_.engine(faults);
    if (held) {
      auto holds = held->hold(*engine);
      EXPECT_TRUE(holds) << holds.error().what();
    }
    auto ring = slot_ring::create(std::move(engine), std::move(r));
    EXPECT_TRUE(ring) << ring.error().what();
    return ring ? *ring : nullptr;
  }
  expected<void> submit(slot_ring& ring, int number) {
    auto slot = ring.acquire(small_layout(), "batch " + std::to_string(number));
    if (!slot) {
      return std::move(slot).error();
    }
    return ring.submit(**slot, [log = log_, number] { log->handed_over(number); });
  }

  threaded_host_kit kit_;
  std::shared_ptr<ring_log> log_ = std::make_shared<ring_log>();
};

// Defect 3 of issue 14: a fault of the device's asynchronous work (the second copy) must fail
// the ring with an error naming the batch and the engine, not leave the trainer waiting.
TEST_F(RingFaults, AnInjectedCopyFaultFailsTheRingNamingTheBatch) {
  host_engine_faults faults;
  faults.fail_copy = 2;
  // Both batches are queued before the engine runs any of it: else the fault (copy 2, batch
  // 1's) may strike while submit(1) is still queueing, and submit(1) returns it (sticky).
  stream_gate gate;
  auto ring = make_ring(faults, std::chrono::seconds(30), &gate);
  ASSERT_TRUE(ring);
  ASSERT_TRUE(submit(*ring, 0));
  ASSERT_TRUE(submit(*ring, 1));
  gate.open();
  auto failure = log_->wait_for_failure();
  ASSERT_TRUE(failure) << "no failure within a minute";
  EXPECT_EQ(failure->code(), errc::device_error);
  for (const char* part : {"feeder 0", "batch ", "host engine", "copy 2", "injected"}) {
    EXPECT_NE(failure->message().find(part), std::string::npos) << part << ": " << failure->what();
  }
  // As with CUDA's sticky errors, the fault may surface while batch 0 is polled (every query
  // returns it from then on): batch 0 may or may not have been handed over; batch 1 never is.
  auto handed = log_->batches();
  EXPECT_TRUE(handed.empty() || handed == std::vector<int>{0}) << handed.size();
  auto after = submit(*ring, 2);
  ASSERT_FALSE(after) << "the fault is sticky";
  EXPECT_EQ(after.error().code(), errc::device_error);
  EXPECT_EQ(log_->failures(), 1u) << "the ring fails once";
}

TEST_F(RingFaults, AStalledCopyFailsWithinTheDeadline) {
  host_engine_faults faults;
  faults.stall_copy = 1;
  auto ring = make_ring(faults, std::chrono::milliseconds(200));
  ASSERT_TRUE(ring);
  ASSERT_TRUE(submit(*ring, 0));
  auto failure = log_->wait_for_failure();
  ASSERT_TRUE(failure) << "no failure within a minute";
  EXPECT_EQ(failure->code(), errc::timed_out);
  for (const char* part : {"feeder 0", "batch 0", "host engine", "0.2", "stalled"}) {
    EXPECT_NE(failure->message().find(part), std::string::npos) << part << ": " << failure->what();
  }
  EXPECT_TRUE(log_->batches().empty());
  // Teardown cannot drain the stalled engine within the deadline: it leaks the buffers (a
  // device may still write them) instead of waiting for ever or freeing them under the copy.
  ring.reset();
}

TEST_F(RingFaults, SlowCopiesAreStillHandedOverInOrder) {
  host_engine_faults faults;
  faults.copy_delay = std::chrono::milliseconds(5);
  auto ring = make_ring(faults);
  ASSERT_TRUE(ring);
  for (int b = 0; b < 3; ++b) {
    ASSERT_TRUE(submit(*ring, b));
  }
  ASSERT_TRUE(log_->wait_for_batches(3));
  EXPECT_EQ(log_->batches(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(log_->failures(), 0u);
}

// Issue 34: the trainer that drops the last batch of a ring whose feeder is gone waited (up to
// the ring's deadline, pipeline.next_timeout_s) for its own queued work on it. The drop must
// return at once; the memory goes once that work has completed.
TEST(RingMemory, DroppingTheLastBatchNeverWaitsForTheTrainersWork) {
  threaded_host_kit kit;
  auto engine = kit.engine();
  std::weak_ptr<copy_engine> watched = engine;
  ring_options r;
  r.slots = 1;
  r.deadline = std::chrono::minutes(1);
  auto log = std::make_shared<ring_log>();
  auto ring = slot_ring::create(std::move(engine), r);
  ASSERT_TRUE(ring) << ring.error().what();
  auto slot = (*ring)->acquire(small_layout(), "batch 0");
  ASSERT_TRUE(slot) << slot.error().what();
  ASSERT_TRUE((*ring)->submit(**slot, [log] { log->handed_over(0); }));
  ASSERT_TRUE(log->wait_for_batches(1));
  std::promise<void> finish;
  host_stream trainer("trainer", host_stream::mode::threaded);
  trainer.enqueue([done = finish.get_future().share()]() -> expected<void> {
    done.wait();  // the trainer's kernel on the batch, still running
    return {};
  });
  std::shared_ptr<slot_owner> held = *ring;  // what the trainer's batch keeps
  (*ring)->stop();
  ring->reset();
  held->released((*slot)->index(), consumer_stream{&trainer});
  held.reset();  // the last owner goes, on the trainer's thread
  EXPECT_FALSE(watched.expired()) << "the ring waited for the trainer's work, or freed under it";
  finish.set_value();
  ASSERT_TRUE(wait_for_teardowns(std::chrono::steady_clock::now() + std::chrono::minutes(1)));
  EXPECT_TRUE(watched.expired()) << "freed once the trainer's work completed";
}

TEST(RingMemory, ExternalSlotsHoldTheBatchesAndRefuseOneThatDoesNotFit) {
  std::vector<std::vector<std::uint8_t>> memory(2, std::vector<std::uint8_t>(small_layout().bytes));
  ring_options r;
  r.slots = 2;
  r.host_memory = {{memory[0].data(), memory[1].data()}, memory[0].size()};
  in_place_host_kit kit;
  auto ring = slot_ring::create(kit.engine(), r);
  ASSERT_TRUE(ring) << ring.error().what();
  auto slot = (*ring)->acquire(small_layout(), "batch 0");
  ASSERT_TRUE(slot);
  EXPECT_EQ((*slot)->host(), memory[(*slot)->index()].data());
  EXPECT_EQ((*slot)->output().data, memory[(*slot)->index()].data()) << "in place: no copy";
  auto too_big = (*ring)->acquire(small_layout(3), "batch 1");
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), errc::invalid_config);
  EXPECT_NE(too_big.error().message().find("does not fit the slot's 120 bytes"), std::string::npos)
      << too_big.error().what();
  r.slots = 3;
  EXPECT_EQ(slot_ring::create(kit.engine(), r).error().code(), errc::invalid_argument)
      << "2 external slots for a ring of 3";
}

}  // namespace
}  // namespace conveyor::testing

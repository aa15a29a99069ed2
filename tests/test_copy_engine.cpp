// The host copy engine and its streams behave as CUDA's streams and events do, which is what
// lets the ring's protocol be tested on machines without a GPU: work runs in order off the
// caller's thread; an event completes only after the work queued before it; a stream waits for
// an event recorded on another; a fault is sticky for every later call, query and wait; an
// engine destroyed while a copy stalls ends that stall instead of hanging.
#include <gtest/gtest.h>

#include <thread>

#include "core/feeding/host_copy_engine.hpp"
#include "support/stream_gate.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;

auto in_a_minute() {
  return copy_engine::clock::now() + std::chrono::minutes(1);
}

std::shared_ptr<host_copy_engine> threaded(host_engine_faults faults = {}) {
  auto engine = host_copy_engine::create({true, false, faults});
  EXPECT_TRUE(engine) << engine.error().what();
  return *engine;
}

std::unique_ptr<engine_event> event_of(copy_engine& engine) {
  auto e = engine.create_event();
  EXPECT_TRUE(e);
  return std::move(*e);
}

TEST(HostCopyEngine, CopiesRunInOrderOffTheCallersThreadAndAnEventMarksTheirEnd) {
  host_engine_faults slow;
  slow.copy_delay = 20ms;
  auto engine = threaded(slow);
  std::vector<std::uint8_t> a(64, 1), b(64, 2), dst(64, 0);
  auto done = event_of(*engine);
  ASSERT_TRUE(engine->copy_to_device(dst.data(), a.data(), a.size()));
  ASSERT_TRUE(engine->copy_to_device(dst.data(), b.data(), b.size()));
  ASSERT_TRUE(engine->record(*done));
  EXPECT_EQ(engine->query(*done).value(), false) << "two 20 ms copies cannot be done yet";
  auto complete = engine->wait_until(*done, in_a_minute());
  ASSERT_TRUE(complete && *complete);
  EXPECT_EQ(dst, b) << "the second copy ran last";
  EXPECT_EQ(engine->copies(), 2u);
}

TEST(HostCopyEngine, AnEventNeverRecordedIsCompleteAndAWaitEndsAtItsDeadline) {
  host_engine_faults stall;
  stall.stall_copy = 1;
  auto engine = threaded(stall);
  auto never = event_of(*engine);
  EXPECT_TRUE(engine->query(*never).value());
  std::vector<std::uint8_t> src(8), dst(8);
  ASSERT_TRUE(engine->copy_to_device(dst.data(), src.data(), src.size()));
  auto after = event_of(*engine);
  ASSERT_TRUE(engine->record(*after));
  auto complete = engine->wait_until(*after, copy_engine::clock::now() + 50ms);
  ASSERT_TRUE(complete);
  EXPECT_FALSE(*complete) << "the stalled copy holds the event back";
  engine.reset();  // ends the stall: the destructor returns
}

TEST(HostCopyEngine, TheQueueWaitsForAnEventRecordedOnTheConsumersStream) {
  auto engine = threaded();
  host_stream trainer("trainer", host_stream::mode::threaded);
  std::vector<std::uint8_t> batch(16, 5), next(16, 9), seen;
  // The trainer's kernel reads the batch late; the engine's next copy into it must wait.
  trainer.enqueue([&]() -> expected<void> {
    trainer.pause(30ms);
    seen = batch;
    return {};
  });
  auto released = event_of(*engine);
  ASSERT_TRUE(engine->record_on(*released, consumer_stream{&trainer}));
  ASSERT_TRUE(engine->wait_for(*released));
  ASSERT_TRUE(engine->copy_to_device(batch.data(), next.data(), next.size()));
  auto done = event_of(*engine);
  ASSERT_TRUE(engine->record(*done));
  auto complete = engine->wait_until(*done, in_a_minute());
  ASSERT_TRUE(complete && *complete);
  EXPECT_EQ(seen, std::vector<std::uint8_t>(16, 5)) << "the copy overtook the trainer's read";
  EXPECT_EQ(batch, next);
}

TEST(HostCopyEngine, AFaultIsStickyForEveryLaterCallQueryAndWait) {
  host_engine_faults faults;
  faults.fail_copy = 1;
  auto engine = threaded(faults);
  // The copy runs once both calls are queued: else record() may meet its fault already.
  testing::stream_gate gate;
  ASSERT_TRUE(gate.hold(*engine));
  std::vector<std::uint8_t> src(8), dst(8);
  auto done = event_of(*engine);
  ASSERT_TRUE(engine->copy_to_device(dst.data(), src.data(), src.size()));
  ASSERT_TRUE(engine->record(*done));
  gate.open();
  auto waited = engine->wait_until(*done, in_a_minute());
  ASSERT_FALSE(waited) << "the event after a fault never completes: its wait fails";
  EXPECT_EQ(waited.error().code(), errc::device_error);
  EXPECT_NE(waited.error().message().find("copy 1 of 8 bytes failed"), std::string::npos)
      << waited.error().what();
  EXPECT_FALSE(engine->query(*done));
  EXPECT_FALSE(engine->copy_to_device(dst.data(), src.data(), src.size()));
  EXPECT_FALSE(engine->record(*done));
  auto fresh = event_of(*engine);
  EXPECT_FALSE(engine->query(*fresh)) << "as CUDA's: every query returns the sticky error";
}

TEST(HostCopyEngine, InlineWorkRunsAtOnceAndRefusesFaults) {
  auto engine = host_copy_engine::create({false, true, {}});
  ASSERT_TRUE(engine);
  std::vector<std::uint8_t> src(8, 4), dst(8, 0);
  ASSERT_TRUE((*engine)->copy_to_device(dst.data(), src.data(), src.size()));
  EXPECT_EQ(dst, src) << "done before the call returned";
  host_engine_faults faults;
  faults.copy_delay = 1ms;
  auto faulty = host_copy_engine::create({false, true, faults});
  ASSERT_FALSE(faulty);
  EXPECT_EQ(faulty.error().code(), errc::invalid_argument);
}

TEST(HostStream, DestroyingAStreamFailsTheRecordsItNeverRan) {
  auto event = std::make_shared<host_event_state>();
  std::uint64_t record = 0;
  {
    host_stream stream("s", host_stream::mode::threaded);
    stream.enqueue([&stream]() -> expected<void> {
      stream.pause(std::nullopt);  // until destroyed
      return {};
    });
    record = event->arm();
    stream.enqueue_record(event, record);
  }
  auto state = event->done(record);
  ASSERT_FALSE(state) << "a waiter would otherwise wait for ever";
  EXPECT_EQ(state.error().code(), errc::device_error);
}

}  // namespace
}  // namespace conveyor

// The hand-over from a feeder to a trainer (core/delivery/batch_channel): which buffers the
// trainer holds, and every way a wait ends.
#include <gtest/gtest.h>

#include <thread>

#include "core/delivery/batch_channel.hpp"

namespace conveyor {
namespace {

batch_channel::item batch_in(std::uint64_t slot) {
  auto b = std::make_shared<host_batch>();
  b->slot = slot;
  return b;
}

TEST(BatchChannel, ATrainerHoldingEveryBufferIsToldAtOnceInsteadOfWaiting) {
  batch_channel channel(2);
  channel.push(batch_in(0));
  channel.push(batch_in(1));
  auto far = batch_channel::clock::now() + std::chrono::hours(1);
  ASSERT_EQ(channel.pop_until(far).status, batch_channel::outcome::ready);
  ASSERT_EQ(channel.pop_until(far).status, batch_channel::outcome::ready);
  EXPECT_EQ(channel.held(), 2u);
  auto third = channel.pop_until(far);  // would have waited an hour: returns at once
  EXPECT_EQ(third.status, batch_channel::outcome::all_held);
  EXPECT_EQ(third.batch, nullptr);
  EXPECT_EQ(channel.pop(), nullptr) << "the unbounded pop gives up too";
  ASSERT_TRUE(channel.give_back(1));
  channel.push(batch_in(1));
  EXPECT_EQ(channel.pop_until(far).batch->slot, 1u);
}

// The live diagnosis reads the trainers' wait interval by interval: a wait still going on
// counts up to now, not only once it ends (a trainer waiting for a second would otherwise
// look idle-free for a second, then waiting ten times the interval).
TEST(BatchChannel, AWaitStillGoingOnCountsUpToNow) {
  batch_channel channel(2);
  EXPECT_EQ(channel.waited().count(), 0);
  std::thread trainer([&] { EXPECT_NE(channel.pop(), nullptr); });
  const auto give_up = batch_channel::clock::now() + std::chrono::minutes(1);
  while (channel.waited().count() == 0 && batch_channel::clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_GT(channel.waited().count(), 0) << "the trainer is still waiting";
  channel.push(batch_in(0));
  trainer.join();
  const auto after = channel.waited();
  EXPECT_GT(after.count(), 0);
  EXPECT_EQ(channel.waited(), after) << "nobody waits now: the total stands";
}

TEST(BatchChannel, ASecondReleaseOfOneBufferIsRefused) {
  batch_channel channel(3);
  channel.push(batch_in(2));
  auto b = channel.pop();
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(channel.give_back(2));
  EXPECT_FALSE(channel.give_back(2)) << "already back: the feeder must not get it twice";
  EXPECT_FALSE(channel.give_back(7)) << "never handed out";
  EXPECT_EQ(channel.held(), 0u);
}

TEST(BatchChannel, AWaitEndsAtItsDeadlineOrWhenClosed) {
  batch_channel channel(2);
  EXPECT_EQ(channel.pop_until(batch_channel::clock::now()).status,
            batch_channel::outcome::timed_out);
  std::thread closer([&] { channel.close(); });
  auto got = channel.pop_until(batch_channel::clock::now() + std::chrono::hours(1));
  closer.join();
  EXPECT_EQ(got.status, batch_channel::outcome::closed);
  channel.push(batch_in(0));
  EXPECT_EQ(channel.size(), 0u) << "pushes after close are dropped";
}

TEST(BatchChannel, WithoutAKnownRingSizeOnlyBatchesCloseAndDeadlinesEndAWait) {
  batch_channel channel;  // buffers unknown
  for (std::uint64_t s = 0; s < 5; ++s) {
    channel.push(batch_in(s));
    ASSERT_NE(channel.pop(), nullptr);
  }
  EXPECT_EQ(channel.pop_until(batch_channel::clock::now()).status,
            batch_channel::outcome::timed_out);
}

}  // namespace
}  // namespace conveyor

// The serving bookkeeping (core/serving/feed_hub), driven directly: which client gets which
// batch, when a slot comes back, and what a client that attaches after another died receives.
#include <gtest/gtest.h>

#include "core/serving/feed_hub.hpp"

namespace conveyor {
namespace {

// What one client received, in order.
struct inbox {
  std::vector<serve::message> got;
  feed_hub::sender sender() {
    return [this](const serve::message& m) {
      got.push_back(m);
      return true;
    };
  }
  std::vector<std::uint32_t> slots() const {
    std::vector<std::uint32_t> out;
    for (const auto& m : got) {
      if (const auto* b = std::get_if<serve::batch_ready>(&m)) {
        out.push_back(b->slot);
      }
    }
    return out;
  }
  bool ended() const { return !got.empty() && std::holds_alternative<serve::end>(got.back()); }
};

serve::batch_ready batch_in(std::uint32_t slot, std::uint64_t epoch, bool last = false) {
  return {slot, epoch, slot, 4, last};
}

std::uint64_t attach(feed_hub& hub, int job, int rank, inbox& to) {
  std::uint64_t start = 99;
  auto ok = hub.attach(job, rank, to.sender(), [&](std::uint64_t e) { start = e; });
  EXPECT_TRUE(ok) << ok.error().what();
  return start;
}

TEST(FeedHub, ASlotComesBackWhenTheLastJobReleasesIt) {
  feed_hub hub(2, 1, 1);
  inbox a, b;
  attach(hub, 0, 0, a);
  attach(hub, 1, 0, b);
  hub.publish(0, batch_in(0, 0, true));
  EXPECT_EQ(a.slots(), std::vector<std::uint32_t>{0});
  EXPECT_EQ(b.slots(), std::vector<std::uint32_t>{0});
  EXPECT_FALSE(*hub.release(0, 0, 0));
  EXPECT_FALSE(hub.release(0, 0, 0)) << "a second release of the same slot is refused";
  EXPECT_TRUE(*hub.release(1, 0, 0));
  hub.finish(0);
  EXPECT_TRUE(a.ended());
  EXPECT_TRUE(hub.done());
  EXPECT_EQ(hub.released_samples(), (std::vector<std::uint64_t>{4, 4}));
}

TEST(FeedHub, AClientAfterADeadOneGetsWhatItLeftUnreleasedFirst) {
  feed_hub hub(1, 1, 2);
  inbox dead;
  attach(hub, 0, 0, dead);
  hub.publish(0, batch_in(0, 0));
  hub.publish(0, batch_in(1, 0, true));
  hub.publish(0, batch_in(2, 1));
  ASSERT_TRUE(*hub.release(0, 0, 0));
  EXPECT_EQ(hub.detach(0, 0), 2u);
  hub.publish(0, batch_in(0, 1, true));  // published while no client is attached
  inbox heir;
  EXPECT_EQ(attach(hub, 0, 0, heir), 0u) << "slot 1 of epoch 0 is still to be trained on";
  EXPECT_EQ(heir.slots(), (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_FALSE(hub.done());
}

TEST(FeedHub, BadAttachesAreRefusedWithTheReason) {
  feed_hub hub(1, 2, 1);
  inbox a;
  attach(hub, 0, 1, a);
  auto says = [&](int job, int rank, const std::string& text) {
    inbox other;
    auto r = hub.attach(job, rank, other.sender(), [](std::uint64_t) {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find(text), std::string::npos) << r.error().what();
  };
  says(0, 2, "rank 2 is not one of the 2 ranks");
  says(1, 0, "job 1 is not one of the 1 jobs");
  says(0, 1, "already");
}

TEST(FeedHub, AFailureReachesEveryClientAndEveryLaterOne) {
  feed_hub hub(1, 2, 1);
  inbox a;
  attach(hub, 0, 0, a);
  hub.fail(error{errc::worker_failed, "the batcher died"});
  ASSERT_FALSE(a.got.empty());
  EXPECT_TRUE(std::holds_alternative<serve::failure>(a.got.back()));
  inbox late;
  attach(hub, 0, 1, late);
  ASSERT_FALSE(late.got.empty());
  EXPECT_EQ(std::get<serve::failure>(late.got.back()).text, "the batcher died");
}

}  // namespace
}  // namespace conveyor

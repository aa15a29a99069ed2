// Resume states (core/batching/resume_state.hpp): the blob round-trips; it stays small when
// delivery is nearly in order, and under 200 KB for a 1.28 M-sample epoch even when the
// delivered positions are scattered; damaged, truncated, foreign-version and self-contradicting
// blobs are refused with an error that says which; a state of another run is refused naming
// the field that differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <xxhash.h>

#include "core/batching/resume_state.hpp"

namespace conveyor {
namespace {

resume_state sample_state() {
  resume_state s;
  s.dataset_size = 1000;
  s.seed = 42;
  s.order = sample_order::shuffled(true);
  s.epochs = 3;
  s.first_epoch = 1;
  delivered_set e1(1000);
  for (std::uint64_t p = 0; p < 700; ++p) {
    e1.add(p);
  }
  for (std::uint64_t p : {701, 750, 999}) {
    e1.add(p);
  }
  delivered_set e2(1000);
  e2.add(3);
  s.begun = {e1, e2};
  return s;
}

TEST(DeliveredSet, APrefixGrowsAsTheGapsFillAndTheBitmapStaysShort) {
  delivered_set d(200);
  EXPECT_TRUE(d.add(65));
  EXPECT_FALSE(d.add(65)) << "once";
  EXPECT_FALSE(d.add(200)) << "past the end";
  for (std::uint64_t p = 0; p < 130; ++p) {
    d.add(p);
  }
  EXPECT_EQ(d.count(), 130u);
  EXPECT_EQ(d.prefix(), 128u) << "whole words of the bitmap move into the prefix";
  EXPECT_TRUE(d.contains(129));
  EXPECT_FALSE(d.contains(130));
  for (std::uint64_t p = 130; p < 200; ++p) {
    d.add(p);
  }
  EXPECT_TRUE(d.complete());
}

TEST(ResumeState, RoundTripsEveryField) {
  auto s = sample_state();
  auto back = decode(encode(s), "state");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->dataset_size, 1000u);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->order, sample_order::shuffled(true));
  EXPECT_EQ(back->epochs, 3u);
  EXPECT_EQ(back->first_epoch, 1u);
  ASSERT_EQ(back->begun.size(), 2u);
  for (std::uint64_t p = 0; p < 1000; ++p) {
    EXPECT_EQ(back->delivered(1, p), s.delivered(1, p)) << p;
    EXPECT_EQ(back->delivered(2, p), p == 3) << p;
    EXPECT_TRUE(back->delivered(0, p)) << "epochs before first_epoch are complete";
  }
  EXPECT_EQ(back->begun[0].count(), 703u);
}

TEST(ResumeState, StaysSmallForAnImageNetEpoch) {
  const std::uint64_t n = 1'281'167;
  resume_state s;
  s.dataset_size = n;
  s.epochs = 90;
  s.first_epoch = 7;
  delivered_set near(n);  // in order up to a point, then a window's worth reordered
  for (std::uint64_t p = 0; p < 900'000; ++p) {
    near.add(p);
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    near.add(900'000 + rng() % 4096);
  }
  s.begun = {near};
  const auto in_order = encode(s).size();
  EXPECT_LT(in_order, 1024u) << "a prefix and a window-long bitmap";
  delivered_set scattered(n);  // the worst case: every other position, anywhere
  for (std::uint64_t p = 0; p < n; p += 2) {
    scattered.add(p);
  }
  s.begun = {scattered};
  const auto worst = encode(s).size();
  EXPECT_LT(worst, 200u * 1024u);
  RecordProperty("bytes_in_order", static_cast<int>(in_order));
  RecordProperty("bytes_scattered", static_cast<int>(worst));
  auto back = decode(encode(s), "state");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->begun[0].count(), (n + 1) / 2);
}

TEST(ResumeState, DamagedTruncatedAndForeignBlobsAreRefusedSayingWhy) {
  const auto blob = encode(sample_state());
  auto damaged = blob;
  damaged[40] ^= 0x10;
  auto d = decode(damaged, "ckpt.bin");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code(), errc::checksum_mismatch);
  EXPECT_NE(d.error().message().find("ckpt.bin"), std::string::npos) << d.error().what();

  auto truncated = blob;
  truncated.resize(blob.size() - 5);
  auto t = decode(truncated, "ckpt.bin");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message().find("truncated"), std::string::npos) << t.error().what();

  auto newer = blob;
  newer[8] = 3;  // the format version's low byte
  auto v = decode(newer, "ckpt.bin");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("format version 3, this build reads 1 to 2"),
            std::string::npos)
      << v.error().what();

  auto other = decode(std::vector<std::uint8_t>(64, 'x'), "notes.txt");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("no CVYRESUM header"), std::string::npos);
  EXPECT_FALSE(decode({}, "empty"));
}

// A state of format 1 (the release before orders in blocks: a shuffle byte where format 2 has
// the mode, block and span) is read as the global (or no) shuffle it names.
TEST(ResumeState, AStateOfFormatOneIsReadAsTheShuffleItNames) {
  for (bool shuffle : {true, false}) {
    auto s = sample_state();
    s.order = sample_order::shuffled(shuffle);
    auto blob = encode(s);
    constexpr std::size_t header = 8 + 4 + 8;
    constexpr std::size_t mode_at = header + 8 + 8;  // after the dataset size and the seed
    blob.erase(blob.begin() + mode_at + 1, blob.begin() + mode_at + 17);  // block and span
    blob[8] = 1;                                                          // the format version
    std::uint64_t length = 0;  // the payload's, 16 bytes shorter now
    for (int i = 7; i >= 0; --i) {
      length = length << 8 | blob[12 + static_cast<std::size_t>(i)];
    }
    for (int i = 0; i < 8; ++i) {
      blob[12 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((length - 16) >> (8 * i));
    }
    blob.resize(blob.size() - 8);
    const auto sum = XXH3_64bits(blob.data(), blob.size());
    for (int i = 0; i < 8; ++i) {
      blob.push_back(static_cast<std::uint8_t>(sum >> (8 * i)));
    }
    auto back = decode(blob, "v1.bin");
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_EQ(back->order, sample_order::shuffled(shuffle));
    EXPECT_EQ(back->begun.size(), s.begun.size());
    EXPECT_EQ(back->delivered_count(), s.delivered_count());
  }
}

TEST(ResumeState, AStateThatContradictsItselfIsRefused) {
  auto s = sample_state();
  s.begun.push_back(delivered_set(1000));
  s.begun.push_back(delivered_set(1000));  // 4 begun epochs from epoch 1 of 3
  auto e = decode(encode(s), "state");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("do not add up"), std::string::npos) << e.error().what();
  auto past = sample_state();
  past.begun[0] = delivered_set(1000, 990, {std::uint64_t{1} << 20});  // position 1010
  auto p = decode(encode(past), "state");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("past the dataset"), std::string::npos) << p.error().what();
}

TEST(ResumeState, AStateOfAnotherRunIsRefusedNamingTheField) {
  auto s = sample_state();
  const auto global = sample_order::shuffled(true);
  EXPECT_TRUE(check_same_run(s, 1000, 42, global, 3));
  auto size = check_same_run(s, 999, 42, global, 3);
  ASSERT_FALSE(size);
  EXPECT_EQ(size.error().code(), errc::invalid_config);
  EXPECT_NE(size.error().message().find("dataset size is 1000, this run's 999"), std::string::npos);
  auto seed = check_same_run(s, 1000, 7, global, 3);
  ASSERT_FALSE(seed);
  EXPECT_NE(seed.error().message().find("dataset.seed"), std::string::npos);
  EXPECT_FALSE(check_same_run(s, 1000, 42, sample_order::shuffled(false), 3));
  auto blocks = check_same_run(s, 1000, 42, sample_order::in_blocks(16, 4), 3);
  ASSERT_FALSE(blocks);
  EXPECT_NE(blocks.error().message().find("order (dataset.shuffle, shuffle_block, shuffle_span) is "
                                          "global, this run's blocks of 16 samples, 4 a span"),
            std::string::npos)
      << blocks.error().what();
  EXPECT_FALSE(check_same_run(s, 1000, 42, global, 4));
}

// A state of blocks names its block and span, and comes back with them; another block or span
// is another run.
TEST(ResumeState, AnOrderInBlocksRoundTripsAndNamesItsBlockAndSpan) {
  auto s = sample_state();
  s.order = sample_order::in_blocks(92, 32);
  auto back = decode(encode(s), "state");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->order, s.order);
  EXPECT_TRUE(check_same_run(*back, 1000, 42, sample_order::in_blocks(92, 32), 3));
  EXPECT_FALSE(check_same_run(*back, 1000, 42, sample_order::in_blocks(91, 32), 3));
  EXPECT_FALSE(check_same_run(*back, 1000, 42, sample_order::in_blocks(92, 31), 3));
}

// Ranks' own states merge into the run's: the union of what each rank that still records an
// epoch received; epochs before the earliest rank's first are complete.
TEST(ResumeState, RankStatesMergeIntoTheUnionOfWhatTheyReceived) {
  auto rank0 = sample_state();  // epochs 1 and 2 recorded
  auto rank1 = sample_state();
  rank1.first_epoch = 2;  // it ended epoch 1 and no longer records it
  delivered_set e2(1000);
  e2.add(4);
  e2.add(998);
  rank1.begun = {e2};
  auto merged = merge_states({rank0, rank1}, "test");
  ASSERT_TRUE(merged) << merged.error().what();
  EXPECT_EQ(merged->first_epoch, 1u);
  ASSERT_EQ(merged->begun.size(), 2u);
  EXPECT_EQ(merged->begun[0].count(), 703u);  // rank 0's alone: rank 1 adds nothing there
  EXPECT_TRUE(merged->delivered(2, 3));
  EXPECT_TRUE(merged->delivered(2, 4));
  EXPECT_TRUE(merged->delivered(2, 998));
  EXPECT_FALSE(merged->delivered(2, 5));
  EXPECT_EQ(merged->delivered_count(), 1000u + 703u + 3u);

  auto other = rank1;
  other.seed = 43;
  auto refused = merge_states({rank0, other}, "the ranks' states");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("state 1 is of another run"), std::string::npos)
      << refused.error().what();
  EXPECT_FALSE(merge_states({}, "none"));
}

// A set holding the positions `in` of `size`, added one by one (the reference for unite).
delivered_set set_of(std::uint64_t size, const std::vector<std::uint64_t>& in) {
  delivered_set d(size);
  for (auto p : in) {
    d.add(p);
  }
  return d;
}

TEST(DeliveredSet, UniteAndIncludesAgreeWithAddingOneByOneAtAnyAlignment) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 200; ++round) {
    const std::uint64_t size = 1 + random() % 700;
    std::vector<std::uint64_t> a;
    std::vector<std::uint64_t> b;
    const auto prefix_a = random() % (size + 1);  // a run from 0, then scattered bits
    for (std::uint64_t p = 0; p < size; ++p) {
      if (p < prefix_a || random() % 5 == 0) {
        a.push_back(p);
      }
      if (random() % 3 == 0) {
        b.push_back(p);
      }
    }
    auto united = set_of(size, a);
    united.unite(set_of(size, b));
    auto both = a;
    both.insert(both.end(), b.begin(), b.end());
    auto expected = set_of(size, both);
    ASSERT_EQ(united.count(), expected.count()) << "round " << round;
    ASSERT_EQ(united.prefix(), expected.prefix());
    ASSERT_EQ(united.beyond(), expected.beyond());
    EXPECT_TRUE(united.includes(set_of(size, a)));
    EXPECT_TRUE(united.includes(set_of(size, b)));
    EXPECT_EQ(set_of(size, a).includes(set_of(size, b)),
              std::includes(a.begin(), a.end(), b.begin(), b.end()));
  }
}

TEST(ResumeState, MergingAStateThatClaimsAHugeDatasetTakesNoTime) {
  // Of another run: refused before any walk. (The node checks each state against its run
  // when it arrives, so this is the last line of defence.)
  auto huge = sample_state();
  huge.dataset_size = std::uint64_t{1} << 62;
  huge.begun = {delivered_set(huge.dataset_size, 0, {1})};
  EXPECT_FALSE(merge_states({sample_state(), huge}, "test"));
  // Alone: merged word by word, not position by position.
  auto merged = merge_states({huge, huge}, "test");
  ASSERT_TRUE(merged) << merged.error().what();
  EXPECT_EQ(merged->begun[0].count(), 1u);
}

TEST(ResumeState, AClaimWithinWhatWasSentAndOneBeyondIt) {
  auto known = sample_state();  // epoch 1: 0..699, 701, 750, 999; epoch 2: 3
  auto claim = known;
  claim.begun[0] = set_of(1000, {0, 5, 701});
  claim.begun[1] = delivered_set(1000);
  EXPECT_TRUE(claims_within(claim, known));
  claim.begun[1].add(4);  // not sent
  EXPECT_FALSE(claims_within(claim, known));
  auto ahead = known;
  ahead.first_epoch = 2;  // says epoch 1 is over: it is not in `known`
  ahead.begun = {known.begun[1]};
  EXPECT_FALSE(claims_within(ahead, known));
  auto behind = known;
  behind.first_epoch = 0;  // still records epoch 0, which `known` counts complete
  behind.begun.insert(behind.begun.begin(), set_of(1000, {1, 2}));
  EXPECT_TRUE(claims_within(behind, known));
}

TEST(ResumeState, ASignatureAfterTheBlobIsSplitOffAndTheStateStillDecodes) {
  auto blob = encode(sample_state());
  EXPECT_FALSE(split_signature(blob).signature);
  state_signature sig{3, 5, {}};
  sig.mac[0] = 0xAB;
  auto signed_blob = append_signature(blob, sig);
  EXPECT_EQ(signed_blob.size(), blob.size() + state_signature::bytes);
  auto split = split_signature(signed_blob);
  ASSERT_TRUE(split.signature);
  EXPECT_EQ(split.state, blob);
  EXPECT_EQ(split.signature->job, 3u);
  EXPECT_EQ(split.signature->rank, 5u);
  EXPECT_EQ(split.signature->mac[0], 0xAB);
  auto back = decode(signed_blob, "a signed state");
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back->delivered_count(), sample_state().delivered_count());
  EXPECT_LE(signed_blob.size(), max_encoded_size(1000));
}

}  // namespace
}  // namespace conveyor

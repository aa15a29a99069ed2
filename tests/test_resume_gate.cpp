// What a serving node does with its clients' resume states (apps/conveyor-node/resume_gate):
// a state is checked against the run before anything it claims is walked; with a key, only a
// state signed for its own (job, rank) passes; the start is each job's ranks' union, and jobs
// that stand at different points are refused saying where each stands.
#include <gtest/gtest.h>

#include "apps/conveyor-node/resume_gate.hpp"
#include "apps/conveyor-node/state_notary.hpp"
#include "core/serving/blob_fd.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

const run_identity run{24, 5, sample_order::shuffled(true), 2};

resume_state delivered(std::initializer_list<std::uint64_t> positions) {
  resume_state s{run.dataset_size, run.seed, run.order, run.epochs, 0, {delivered_set(24)}};
  for (auto p : positions) {
    s.begun[0].add(p);
  }
  return s;
}

expected<resume_state> read(const std::vector<std::uint8_t>& blob, const state_key* key = nullptr,
                            std::uint32_t job = 0, std::uint32_t rank = 0) {
  auto fd = blob_fd(blob, "test");
  EXPECT_TRUE(fd);
  return read_client_state(fd->get(), blob.size(), job, rank, run, key, "rank 0 of job 0");
}

TEST(ResumeGate, AStateIsCheckedAgainstTheRunBeforeItIsWalked) {
  EXPECT_TRUE(read(encode(delivered({1, 2}))));
  auto other = delivered({1});
  other.seed = 6;
  auto refused = read(encode(other));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("seed"), std::string::npos);
  auto huge = resume_state{std::uint64_t{1} << 62, 5, sample_order::shuffled(true), 2, 0, {}};
  EXPECT_NE(read(encode(huge)).error().message().find("dataset size"), std::string::npos);
  std::vector<std::uint8_t> big(max_encoded_size(run.dataset_size) + 1, 0);
  EXPECT_NE(read(big).error().message().find("more than the"), std::string::npos);
}

TEST(ResumeGate, WithAKeyOnlyAStateSignedForItsOwnJobAndRankPasses) {
  testing::temp_dir dir;
  auto key = state_key::load_or_make((dir / "key").string());
  ASSERT_TRUE(key);
  auto blob = encode(delivered({1, 2}));
  EXPECT_FALSE(read(blob, &*key)) << "unsigned";
  auto signed_blob = append_signature(blob, key->sign(blob, 0, 0));
  EXPECT_TRUE(read(signed_blob, &*key));
  EXPECT_FALSE(read(signed_blob, &*key, 0, 1)) << "as another rank";
}

TEST(ResumeGate, EachJobsRanksUniteAndJobsMustStandAtOnePoint) {
  std::vector<waiting_state> same{
      {0, delivered({0, 1})}, {0, delivered({2})}, {1, delivered({0, 2})}, {1, delivered({1})}};
  auto start = start_state(same, 2, run);
  ASSERT_TRUE(start) << start.error().what();
  ASSERT_TRUE(*start);
  EXPECT_EQ((*start)->delivered_count(), 3u);

  std::vector<waiting_state> apart{{0, delivered({0, 1, 2, 3})}, {1, delivered({0, 1})}};
  auto refused = start_state(apart, 2, run);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("job 0 had 4 samples, job 1 had 2 samples"),
            std::string::npos)
      << refused.error().what();

  std::vector<waiting_state> fresh{{0, std::nullopt}, {1, std::nullopt}};
  auto none = start_state(fresh, 2, run);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "no state: from the start";
}

TEST(StateNotary, SignsWhatWasSentAndNothingMore) {
  testing::temp_dir dir;
  auto key = state_key::load_or_make((dir / "key").string());
  ASSERT_TRUE(key);
  state_notary notary(run, 1, 1, *key);
  // A client that received nothing may sign the state that says so.
  EXPECT_TRUE(notary.sign(0, 0, encode(delivered({}))));
  // One that claims a sample the node never sent is refused.
  auto claim = notary.sign(0, 0, encode(delivered({0})));
  ASSERT_FALSE(claim);
  EXPECT_EQ(claim.error().code(), errc::permission_denied);
  // Once a batch was published, a state that holds its samples is signed, and verifies.
  delivery_tracker client({run.dataset_size, run.seed, run.order, run.epochs, 0, {}}, 1, 1);
  const std::vector<std::uint64_t> ids{7, 3, 19};
  notary.published(0, 0, ids, false);
  client.record(0, 0, ids, false);
  auto blob = encode(client.state());
  auto signature = notary.sign(0, 0, blob);
  ASSERT_TRUE(signature) << signature.error().what();
  EXPECT_TRUE(key->verify(split_signature(append_signature(blob, *signature)), 0, 0));
  // What a state vouched for at the start counts as sent.
  notary.vouch_for(0, 0, delivered({0}));
  EXPECT_TRUE(notary.sign(0, 0, encode(delivered({0}))));
}

}  // namespace
}  // namespace conveyor

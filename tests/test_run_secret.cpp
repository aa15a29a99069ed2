// The run's secret (core/cluster/run_secret.hpp): a proof of rank holds for exactly what it was
// made for (every field, the direction, the secret), and the secret file is refused unless it
// is a private, non-empty regular file, each refusal naming the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "core/cluster/run_secret.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

proof_subject rank_1_to_rank_2() {
  return {2, 1, 2, 60, 5, 3, 0x1234};
}

TEST(RunSecret, AProofHoldsOnlyForWhatItWasMadeFor) {
  run_secret secret("correct horse battery staple");
  const auto subject = rank_1_to_rank_2();
  const auto proof = secret.prove(subject);
  EXPECT_EQ(proof.size(), 32u);  // HMAC-SHA256
  EXPECT_TRUE(secret.verify(subject, proof));
  // Each field is covered: change any one and the proof no longer holds.
  for (std::uint64_t proof_subject::*field :
       {&proof_subject::protocol, &proof_subject::sender, &proof_subject::receiver,
        &proof_subject::dataset_size, &proof_subject::seed, &proof_subject::world,
        &proof_subject::plan_digest}) {
    auto changed = subject;
    changed.*field += 1;
    EXPECT_FALSE(secret.verify(changed, proof));
  }
  // Rank 2's answer to rank 1 is a proof of its own.
  auto back = subject;
  std::swap(back.sender, back.receiver);
  EXPECT_FALSE(secret.verify(back, proof));
  EXPECT_TRUE(secret.verify(back, secret.prove(back)));
  // Another secret, a truncated proof, no proof: refused.
  EXPECT_FALSE(run_secret("another secret").verify(subject, proof));
  EXPECT_FALSE(secret.verify(subject, {proof.begin(), proof.end() - 1}));
  EXPECT_FALSE(secret.verify(subject, {}));
}

TEST(RunSecret, WithoutASecretRanksAreTakenOnTheirWord) {
  run_secret none;
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.prove(rank_1_to_rank_2()).empty());
  EXPECT_TRUE(none.verify(rank_1_to_rank_2(), {}));
}

std::filesystem::path secret_at(const temp_dir& dir, const std::string& text, mode_t mode) {
  auto path = dir / "secret";
  std::ofstream(path) << text;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

TEST(RunSecret, TheFileMustBePrivateRegularAndNotEmpty) {
  temp_dir dir;
  auto good = read_secret_file(secret_at(dir, "s3cret\n", 0600));
  ASSERT_TRUE(good) << good.error().what();
  // The line break an editor or `echo` adds is not part of the secret.
  EXPECT_TRUE(good->verify(rank_1_to_rank_2(), run_secret("s3cret").prove(rank_1_to_rank_2())));
  EXPECT_TRUE(read_secret_file(secret_at(dir, "s3cret", 0400)));

  auto expect_refused = [](const std::filesystem::path& path, errc code, const std::string& why) {
    auto read = read_secret_file(path);
    ASSERT_FALSE(read) << path;
    EXPECT_EQ(read.error().code(), code) << read.error().what();
    EXPECT_NE(read.error().message().find(path.string() + ": " + why), std::string::npos)
        << read.error().what();
  };
  expect_refused(secret_at(dir, "s3cret", 0640), errc::permission_denied,
                 "its group or others may read or write it");
  expect_refused(secret_at(dir, "s3cret", 0602), errc::permission_denied,
                 "its group or others may read or write it");
  expect_refused(secret_at(dir, "\n", 0600), errc::invalid_config, "empty");
  expect_refused(dir / "missing", errc::not_found, "No such file");
  expect_refused(dir.path(), errc::invalid_config, "not a regular file");
}

}  // namespace
}  // namespace conveyor

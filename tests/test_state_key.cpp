// The key a serving node signs resume states with (core/serving/state_key.hpp): made on first
// use as a 0600 file and read back the same; a file others may read, of another user, or of the
// wrong size is refused naming it; a signature holds for its state, job and rank only.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "core/serving/state_key.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

std::vector<std::uint8_t> a_state(std::uint64_t delivered) {
  resume_state s{100, 7, sample_order::shuffled(true), 2, 0, {delivered_set(100)}};
  for (std::uint64_t p = 0; p < delivered; ++p) {
    s.begun[0].add(p);
  }
  return encode(s);
}

TEST(StateKey, IsMadeOnFirstUseForThisUserAloneAndReadBackTheSame) {
  temp_dir dir;
  auto path = (dir / "key").string();
  auto made = state_key::load_or_make(path);
  ASSERT_TRUE(made) << made.error().what();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  auto again = state_key::load_or_make(path);
  ASSERT_TRUE(again) << again.error().what();
  auto blob = a_state(10);
  EXPECT_EQ(made->sign(blob, 0, 1).mac, again->sign(blob, 0, 1).mac);
}

TEST(StateKey, ASignatureHoldsForItsStateJobAndRankOnly) {
  temp_dir dir;
  auto key = state_key::load_or_make((dir / "key").string());
  ASSERT_TRUE(key);
  auto blob = a_state(10);
  auto signed_blob = split_signature(append_signature(blob, key->sign(blob, 2, 3)));
  EXPECT_TRUE(key->verify(signed_blob, 2, 3));
  EXPECT_FALSE(key->verify(signed_blob, 2, 4)) << "another rank";
  EXPECT_FALSE(key->verify(signed_blob, 1, 3)) << "another job";
  EXPECT_FALSE(key->verify(split_signature(blob), 2, 3)) << "unsigned";
  auto forged = signed_blob;
  forged.state = a_state(11);
  EXPECT_FALSE(key->verify(forged, 2, 3)) << "another state under the same signature";
  temp_dir elsewhere;
  auto other = state_key::load_or_make((elsewhere / "key").string());
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->verify(signed_blob, 2, 3)) << "another node's key";
}

TEST(StateKey, AKeyFileOthersMayReadOrOfTheWrongSizeIsRefusedNamingIt) {
  temp_dir dir;
  auto path = (dir / "key").string();
  std::ofstream(path) << std::string(32, 'k');
  ::chmod(path.c_str(), 0644);
  auto open_to_all = state_key::load_or_make(path);
  ASSERT_FALSE(open_to_all);
  EXPECT_EQ(open_to_all.error().code(), errc::permission_denied);
  EXPECT_NE(open_to_all.error().message().find(path), std::string::npos);
  EXPECT_NE(open_to_all.error().message().find("chmod 600"), std::string::npos);
  ::chmod(path.c_str(), 0600);
  EXPECT_TRUE(state_key::load_or_make(path));
  std::ofstream(path) << "short";
  auto short_key = state_key::load_or_make(path);
  ASSERT_FALSE(short_key);
  EXPECT_NE(short_key.error().message().find("holds 5 bytes; it must hold 32 to 4096"),
            std::string::npos);
  auto directory = state_key::load_or_make(dir.path().string());
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace conveyor

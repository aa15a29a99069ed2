// A blocking call run with a bound on its caller's wait (core/base/bounded_call.hpp): the
// caller goes on with timed_out while the call still blocks, and gets the call's own result
// when it returns in time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/base/bounded_call.hpp"
#include "core/base/unique_fd.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

TEST(BoundedCall, ACallThatBlocksLeavesItsCallerTimedOut) {
  testing::temp_dir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading blocks until a writer comes: it does not, until after the wait.
  auto got = call_within<int>(std::chrono::milliseconds(50), "opening " + fifo.string(), [fifo] {
    unique_fd fd(::open(fifo.c_str(), O_RDONLY | O_CLOEXEC));
    return expected<int>(fd.get());
  });
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), errc::timed_out);
  EXPECT_NE(got.error().message().find(fifo.string()), std::string::npos) << got.error().what();
  // The writer lets the call return; it closes what it opened on its own thread.
  unique_fd writer(::open(fifo.c_str(), O_WRONLY | O_CLOEXEC));
  EXPECT_TRUE(writer);
}

TEST(BoundedCall, ACallThatReturnsGivesItsResult) {
  auto value = call_within<int>(std::chrono::minutes(1), "six", [] { return expected<int>(6); });
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, 6);
  auto failure = call_within<int>(std::chrono::minutes(1), "a failure", [] {
    return expected<int>(error{errc::io_error, "it failed"});
  });
  ASSERT_FALSE(failure);
  EXPECT_EQ(failure.error().message(), "it failed");
}

}  // namespace
}  // namespace conveyor

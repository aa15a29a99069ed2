// The log throttle (core/base/log_throttle.hpp): a flood of lines is cut to the rate, and the
// next line that passes counts what was left out.
#include <gtest/gtest.h>

#include "core/base/log_throttle.hpp"

namespace conveyor {
namespace {

TEST(LogThrottle, AFloodIsCutToTheRateAndWhatWasLeftOutIsCounted) {
  log_throttle throttle(3);
  const auto t0 = log_throttle::clock::time_point{} + std::chrono::hours(1);
  std::uint64_t left_out = 99;
  int passed = 0;
  for (int i = 0; i < 10; ++i) {
    passed += throttle.allow(t0 + std::chrono::milliseconds(i), left_out) ? 1 : 0;
  }
  EXPECT_EQ(passed, 3);
  EXPECT_TRUE(throttle.allow(t0 + std::chrono::milliseconds(1500), left_out));
  EXPECT_EQ(left_out, 7u);
  EXPECT_TRUE(throttle.allow(t0 + std::chrono::milliseconds(1501), left_out));
  EXPECT_EQ(left_out, 0u);
}

}  // namespace
}  // namespace conveyor

// The volume and speech steps' own draws (core/transforms/step_draws.hpp): the ziggurat's normals
// are standard normal (moments and tail shares of a million, tails beyond the ziggurat's base layer
// included), uniforms and integers stay in their ranges, and a seed gives the same draws.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/transforms/step_draws.hpp"

namespace conveyor {
namespace {

TEST(VolumeDraws, NormalsAreStandardNormal) {
  std::mt19937_64 rng(31);
  rng_draws draws(rng);
  std::vector<double> z(1 << 20);
  for (std::size_t at = 0; at < z.size(); at += 4096) {
    draws.standard_normals("noise.z", z.data() + at, 4096);
  }
  double mean = 0, var = 0;
  std::size_t beyond_2 = 0, beyond_3 = 0, tail_low = 0, tail_high = 0;
  for (double x : z) {
    mean += x;
  }
  mean /= static_cast<double>(z.size());
  for (double x : z) {
    var += (x - mean) * (x - mean);
    beyond_2 += std::abs(x) > 2;
    beyond_3 += std::abs(x) > 3;
    tail_low += x < -3.6;
    tail_high += x > 3.6;
  }
  var /= static_cast<double>(z.size());
  const auto n = static_cast<double>(z.size());
  EXPECT_NEAR(mean, 0.0, 0.005);               // 5 standard errors
  EXPECT_NEAR(var, 1.0, 0.007);                // 5 standard errors
  EXPECT_NEAR(beyond_2 / n, 0.0455, 0.001);    // 5 standard errors
  EXPECT_NEAR(beyond_3 / n, 0.0027, 0.00026);  // 5 standard errors
  EXPECT_GT(tail_low, 50u) << "~166 expected below -3.6 (the tail beyond the base layer)";
  EXPECT_GT(tail_high, 50u);
}

TEST(VolumeDraws, RangesHoldAndASeedRepeats) {
  std::mt19937_64 a(5), b(5);
  rng_draws da(a), db(b);
  for (int i = 0; i < 10000; ++i) {
    auto u = da.uniform("brightness.factor", 0.7, 1.3);
    EXPECT_TRUE(u >= 0.7 && u < 1.3);
    EXPECT_EQ(u, db.uniform("brightness.factor", 0.7, 1.3));
    auto k = da.randrange("crop.corner0", 3);
    EXPECT_TRUE(k >= 0 && k < 3);
    EXPECT_EQ(k, db.randrange("crop.corner0", 3));
    auto r = da.random("flip0");
    EXPECT_TRUE(r >= 0.0 && r < 1.0);
    EXPECT_EQ(r, db.random("flip0"));
  }
}

}  // namespace
}  // namespace conveyor

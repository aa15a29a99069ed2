// Moving normalize to the feeder: the CPU chain ends with to_uint8 and the feeder gets the spec.
#include <gtest/gtest.h>

#include "core/transforms/normalize_placement.hpp"

namespace conveyor {
namespace {

TEST(NormalizePlacement, TheFinalNormalizeMovesAndToUint8TakesItsPlace) {
  normalize_spec custom;
  custom.mean = {0.5, 0.5, 0.5};
  auto placed = move_normalize_to_feeder({decode_spec{}, center_crop_spec{}, custom});
  ASSERT_EQ(placed.cpu_chain.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<decode_spec>(placed.cpu_chain[0]));
  EXPECT_TRUE(std::holds_alternative<to_uint8_spec>(placed.cpu_chain[2]));
  ASSERT_TRUE(placed.in_feeder);
  EXPECT_EQ(placed.in_feeder->mean, custom.mean);
}

TEST(NormalizePlacement, AChainWithoutAFinalNormalizeStaysWhole) {
  auto placed = move_normalize_to_feeder({decode_spec{}, to_uint8_spec{}});
  EXPECT_EQ(placed.cpu_chain.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<to_uint8_spec>(placed.cpu_chain[1]));
  EXPECT_FALSE(placed.in_feeder);
  EXPECT_FALSE(move_normalize_to_feeder({}).in_feeder);
}

}  // namespace
}  // namespace conveyor

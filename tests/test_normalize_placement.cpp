// Moving normalize to the GPU: the CPU chain ends with to_uint8 and the feeder gets the spec.
#include <gtest/gtest.h>

#include "core/transforms/normalize_placement.hpp"

namespace conveyor {
namespace {

TEST(NormalizePlacement, TheFinalNormalizeMovesAndToUint8TakesItsPlace) {
  normalize_spec custom;
  custom.mean = {0.5, 0.5, 0.5};
  auto placed = move_normalize_to_gpu({decode_spec{}, center_crop_spec{}, custom});
  ASSERT_EQ(placed.cpu_chain.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<decode_spec>(placed.cpu_chain[0]));
  EXPECT_TRUE(std::holds_alternative<to_uint8_spec>(placed.cpu_chain[2]));
  ASSERT_TRUE(placed.on_gpu);
  EXPECT_EQ(placed.on_gpu->mean, custom.mean);
}

TEST(NormalizePlacement, AChainWithoutAFinalNormalizeStaysWhole) {
  auto placed = move_normalize_to_gpu({decode_spec{}, to_uint8_spec{}});
  EXPECT_EQ(placed.cpu_chain.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<to_uint8_spec>(placed.cpu_chain[1]));
  EXPECT_FALSE(placed.on_gpu);
  EXPECT_FALSE(move_normalize_to_gpu({}).on_gpu);
}

}  // namespace
}  // namespace conveyor

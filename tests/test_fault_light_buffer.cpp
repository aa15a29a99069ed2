// fault_light_buffer (core/base/fault_light_buffer.hpp): both size classes (the heap, and a
// huge-page-aligned mapping) give a buffer whose every byte can be written and read back,
// independent of the others; a size no memory can hold is null, not a throw.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/base/fault_light_buffer.hpp"

namespace conveyor {
namespace {

TEST(FaultLightBuffer, EverySizeHoldsItsBytes) {
  const std::vector<std::size_t> sizes = {1,        4095,           64u << 10, (2u << 20) - 1,
                                          2u << 20, (5u << 20) + 17};
  std::vector<std::shared_ptr<std::uint8_t[]>> held;
  for (auto size : sizes) {
    auto b = fault_light_buffer(size);
    ASSERT_NE(b, nullptr) << size;
    for (std::size_t i = 0; i < size; ++i) {
      b[i] = static_cast<std::uint8_t>(i * 7 + size);
    }
    held.push_back(b);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    for (std::size_t i = 0; i < sizes[k]; ++i) {
      ASSERT_EQ(held[k][i], static_cast<std::uint8_t>(i * 7 + sizes[k])) << sizes[k] << " at " << i;
    }
  }
}

TEST(FaultLightBuffer, AHugeBufferIsAlignedToItsPages) {
  auto b = fault_light_buffer(4u << 20);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.get()) % (2u << 20), 0u);
}

TEST(FaultLightBuffer, ASizeNoMemoryCanHoldIsNullNotAThrow) {
  EXPECT_EQ(fault_light_buffer(std::size_t{1} << 62), nullptr);
}

}  // namespace
}  // namespace conveyor

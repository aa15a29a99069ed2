// Which feeders serve a topology's `gpus`: host feeders for `gpus = N`; CUDA devices when the
// build and the machine have them; otherwise host feeders stand in (a warning says so).
#include <gtest/gtest.h>

#include "api/resolve_devices.hpp"

#if CONVEYOR_HAVE_CUDA
#include "core/cuda/device_query.hpp"
#endif

namespace conveyor {
namespace {

int devices_here() {
#if CONVEYOR_HAVE_CUDA
  auto d = cuda::list_devices();
  return d ? static_cast<int>(d->size()) : 0;
#else
  return 0;
#endif
}

TEST(ResolveDevices, HostFeedersAskedForAreHostFeeders) {
  gpu_selection g{gpu_kind::host_feeders, {}, 3};
  auto d = resolve_devices(g, "node.toml");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->empty());
  EXPECT_EQ(gpu_slots(g, *d), 3);
}

TEST(ResolveDevices, AutoTakesEveryDeviceOrOneHostFeeder) {
  gpu_selection g;
  auto d = resolve_devices(g, "node.toml");
  ASSERT_TRUE(d);
  EXPECT_EQ(static_cast<int>(d->size()), devices_here());
  EXPECT_EQ(gpu_slots(g, *d), std::max(1, devices_here()));
}

TEST(ResolveDevices, ListedIdsAreCheckedWhereDevicesExist) {
  gpu_selection g{gpu_kind::device_ids, {0, 7}, 0};
  auto d = resolve_devices(g, "node.toml");
  if (devices_here() == 0) {
    ASSERT_TRUE(d);  // host feeders stand in, one per listed id
    EXPECT_TRUE(d->empty());
    EXPECT_EQ(gpu_slots(g, *d), 2);
  } else if (devices_here() <= 7) {
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().code(), errc::invalid_config);
    EXPECT_NE(std::string(d.error().what()).find("node.toml: gpus: CUDA device 7"),
              std::string::npos)
        << d.error().what();
  }
}

}  // namespace
}  // namespace conveyor

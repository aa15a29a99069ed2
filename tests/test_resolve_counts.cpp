// The counts of [pipeline] that may be "auto" (api/resolve_topology.hpp): readers and
// per_worker_limit follow the preprocessors (one reader per 8; 2 samples each under 8
// preprocessors, 4 from 8), preprocessors follow the cores, and a number given is kept.
#include <gtest/gtest.h>

#include "api/resolve_topology.hpp"
#include "config/topology.hpp"

namespace conveyor {
namespace {

TEST(ResolveCounts, ReadersAreOnePerEightPreprocessorsAndEachHoldsTwoUnderEightFourFromEight) {
  struct row {
    int preprocessors, readers, per_worker_limit;
  };
  for (auto r : {row{0, 1, 2}, row{1, 1, 2}, row{2, 1, 2}, row{7, 1, 2}, row{8, 1, 4}, row{9, 2, 4},
                 row{16, 2, 4}, row{17, 3, 4}, row{64, 8, 4}}) {
    EXPECT_EQ(auto_readers(r.preprocessors), r.readers) << r.preprocessors;
    EXPECT_EQ(auto_per_worker_limit(r.preprocessors), r.per_worker_limit) << r.preprocessors;
  }
}

TEST(ResolveCounts, AutoFollowsThePreprocessorsAndNumbersAreKept) {
  pipeline_config p;  // every count "auto"
  auto here = resolve_counts(p);
  EXPECT_EQ(here.preprocessors, hardware_cores());
  EXPECT_EQ(here.readers, auto_readers(hardware_cores()));
  EXPECT_EQ(here.per_worker_limit, auto_per_worker_limit(hardware_cores()));
  EXPECT_EQ(here.stragglers, hardware_cores());

  p.preprocessors = 16;
  auto sixteen = resolve_counts(p);
  EXPECT_EQ(sixteen.preprocessors, 16);
  EXPECT_EQ(sixteen.readers, 2);
  EXPECT_EQ(sixteen.per_worker_limit, 4);

  p.readers = 3;
  p.per_worker_limit = 1;
  p.stragglers = 0;
  auto given = resolve_counts(p);
  EXPECT_EQ(given.readers, 3);
  EXPECT_EQ(given.per_worker_limit, 1);
  EXPECT_EQ(given.stragglers, 0);
}

}  // namespace
}  // namespace conveyor

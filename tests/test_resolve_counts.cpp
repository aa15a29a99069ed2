// The counts of [pipeline] that may be "auto" (api/resolve_topology.hpp): readers and
// per_worker_limit follow the preprocessors (one reader per 8; 2 samples each under 8
// preprocessors, 4 from 8), preprocessors follow the cores, and a number given is kept.
#include <gtest/gtest.h>

#include "api/resolve_topology.hpp"
#include "config/topology.hpp"

namespace conveyor {
namespace {

TEST(ResolveCounts, ReadersAreOnePerEightPreprocessors) {
  EXPECT_EQ(auto_readers(1), 1);
  EXPECT_EQ(auto_readers(2), 1);
  EXPECT_EQ(auto_readers(8), 1);
  EXPECT_EQ(auto_readers(9), 2);
  EXPECT_EQ(auto_readers(16), 2);
  EXPECT_EQ(auto_readers(17), 3);
  EXPECT_EQ(auto_readers(0), 1);  // never none
}

TEST(ResolveCounts, EachPreprocessorHoldsTwoUnderEightAndFourFromEight) {
  EXPECT_EQ(auto_per_worker_limit(1), 2);
  EXPECT_EQ(auto_per_worker_limit(2), 2);
  EXPECT_EQ(auto_per_worker_limit(7), 2);
  EXPECT_EQ(auto_per_worker_limit(8), 4);
  EXPECT_EQ(auto_per_worker_limit(16), 4);
  EXPECT_EQ(auto_per_worker_limit(64), 4);
}

TEST(ResolveCounts, AutoFollowsThePreprocessorsAndNumbersAreKept) {
  pipeline_config p;  // every count "auto"
  auto here = resolve_counts(p);
  EXPECT_EQ(here.preprocessors, hardware_cores());
  EXPECT_EQ(here.readers, auto_readers(hardware_cores()));
  EXPECT_EQ(here.per_worker_limit, auto_per_worker_limit(hardware_cores()));

  p.preprocessors = 16;
  auto sixteen = resolve_counts(p);
  EXPECT_EQ(sixteen.preprocessors, 16);
  EXPECT_EQ(sixteen.readers, 2);
  EXPECT_EQ(sixteen.per_worker_limit, 4);

  p.readers = 3;
  p.per_worker_limit = 1;
  auto given = resolve_counts(p);
  EXPECT_EQ(given.readers, 3);
  EXPECT_EQ(given.per_worker_limit, 1);
}

}  // namespace
}  // namespace conveyor

// A trainer's sampler's order ([python] order_file) and the Python dataset over it: the file
// is checked before any index is trusted, and sample j is dataset[order[j]].
#include "core/python/sampler_order.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/base/little_endian.hpp"
#include "core/python/python_dataset.hpp"
#include "support/python_workers.hpp"

namespace conveyor {
namespace {

TEST(SamplerOrder, IsReadIndexByIndexRepeatsAndAllAndEachCheckedAgainstTheDataset) {
  testing::temp_dir dir;
  const auto path = (dir / "epoch.order").string();
  testing::write_file(path, testing::sampler_order_bytes({4, 4, 0, 9}));
  auto order = read_sampler_order(path, 10);
  ASSERT_TRUE(order) << order.error().what();
  EXPECT_EQ(*order, (std::vector<std::uint64_t>{4, 4, 0, 9}));

  auto past = read_sampler_order(path, 9);  // 9 is past a dataset of 9
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code(), errc::invalid_config);
  EXPECT_NE(past.error().message().find("position 3 holds 9, past the dataset (len(dataset) is 9)"),
            std::string::npos)
      << past.error().message();
}

TEST(SamplerOrder, ASizeThatIsNoWholeNumberOfIndicesOrNothingOrNoRegularFileIsRefused) {
  testing::temp_dir dir;
  auto bytes = testing::sampler_order_bytes({1, 2});
  bytes.pop_back();
  testing::write_file(dir / "short.order", bytes);
  testing::write_file(dir / "empty.order", {});
  for (const char* name : {"short.order", "empty.order"}) {
    auto order = read_sampler_order((dir / name).string(), 10);
    ASSERT_FALSE(order) << name;
    EXPECT_EQ(order.error().code(), errc::invalid_config);
    EXPECT_NE(order.error().message().find("not a sampler's order"), std::string::npos)
        << order.error().message();
  }
  const auto fifo = (dir / "fifo.order").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = read_sampler_order(fifo, 10);  // refused, never opened: nothing blocks
  ASSERT_FALSE(from_fifo);
  EXPECT_NE(from_fifo.error().message().find(fifo), std::string::npos);
  EXPECT_FALSE(read_sampler_order((dir / "none.order").string(), 10));
}

TEST(PythonDataset, InASamplersOrderSampleJIsDatasetOfOrderJAndItsRecordSaysSo) {
  python_dataset plain(5);
  EXPECT_EQ(plain.size(), 5u);
  EXPECT_EQ(plain.locate(3), "dataset[3]");
  python_dataset ordered(5, {4, 4, 1});
  EXPECT_EQ(ordered.size(), 3u);
  EXPECT_EQ(ordered.index_of(1), 4u);
  EXPECT_EQ(ordered.locate(2), "dataset[1]");
  for (const auto* d : {&plain, &ordered}) {
    for (std::uint64_t j = 0; j < d->size(); ++j) {
      auto r = d->read(j);
      ASSERT_TRUE(r) << r.error().what();
      EXPECT_EQ(r->key, d->locate(j));
      ASSERT_EQ(r->payload.size(), 8u);
      EXPECT_EQ(little_endian::load<std::uint64_t>(r->payload.data()), d->index_of(j));
    }
  }
  auto past = ordered.read(3);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code(), errc::not_found);
}

}  // namespace
}  // namespace conveyor

// The hand-off decision a preprocessor makes before each step (actors/sample_work.hpp,
// past_budget): before the first step by the header's size, before a cheap user step never,
// before a user step whose cost grows with a field's elements by that count (which becomes the
// sample's size for the budget's cost model) or the clock, before a built-in step by the clock.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "actors/sample_work.hpp"
#include "conveyor/step.hpp"

namespace conveyor {
namespace {

/// A step that reads the image and declares `cost`; it does nothing.
class hinted final : public step {
 public:
  explicit hinted(cost_hint cost) : cost_(std::move(cost)) {}
  step_declaration declare() const override { return {{{"image", dtype::uint8, 3}}, {}, cost_}; }
  void apply(sample_view& /*s*/, std::mt19937_64& /*rng*/) const override {}

 private:
  cost_hint cost_;
};

constexpr std::size_t cheap_step = 1, sized_step = 2, clock_step = 3;

/// decode, a cheap user step, a user step per element of the image, center_crop, to_uint8.
transform_chain chain() {
  center_crop_spec crop;
  crop.width = 8;
  crop.height = 8;
  auto c = transform_chain::build(
      {decode_spec{}, user_step_spec{"cheap", std::make_shared<hinted>(cost_hint::cheap())},
       user_step_spec{"sized", std::make_shared<hinted>(cost_hint::per_element_of("image"))}, crop,
       to_uint8_spec{}});
  EXPECT_TRUE(c) << c.error().what();
  return *c;
}

/// A sample about to run step `next`, its image `rows` x `cols` x 3.
sample_state at_step(const transform_chain& c, std::size_t next, int rows, int cols) {
  sample_state s;
  c.start(s, 0);
  s.next_step = next;
  s.fields[1].set(cv::Mat(rows, cols, CV_8UC3, cv::Scalar::all(0)));
  return s;
}

budget_figures budget(std::int64_t ns, std::int64_t size) {
  return {ns, size};
}

TEST(PastBudget, BeforeTheFirstStepTheHeadersSizeDecides) {
  auto c = chain();
  auto s = at_step(c, 0, 4, 4);
  s.source_pixels = 1000;
  EXPECT_TRUE(past_budget(c, s, budget(1'000'000, 999), 0));
  EXPECT_FALSE(past_budget(c, s, budget(1'000'000, 1000), 5'000'000)) << "not the clock";
}

TEST(PastBudget, BeforeACheapStepNever) {
  auto c = chain();
  auto s = at_step(c, cheap_step, 100, 100);
  EXPECT_EQ(c.next_cost(s).how, step_cost::kind::cheap);
  EXPECT_FALSE(past_budget(c, s, budget(1'000, 10), 1'000'000'000));
}

TEST(PastBudget, BeforeASizedStepTheFieldsElementsDecideAndBecomeTheSamplesSize) {
  auto c = chain();
  auto big = at_step(c, sized_step, 10, 20);  // 600 elements
  EXPECT_TRUE(past_budget(c, big, budget(1'000'000, 599), 0));
  EXPECT_EQ(big.source_pixels, 600) << "the budget's cost model learns against this size";
  auto small = at_step(c, sized_step, 10, 20);
  EXPECT_FALSE(past_budget(c, small, budget(1'000'000, 600), 999'999));
  EXPECT_TRUE(past_budget(c, small, budget(1'000'000, 600), 1'000'001)) << "the clock still";
  auto known = at_step(c, sized_step, 10, 20);
  known.source_pixels = 7;  // a header gave the size: it stays
  EXPECT_TRUE(past_budget(c, known, budget(1'000'000, 599), 0));
  EXPECT_EQ(known.source_pixels, 7);
}

TEST(PastBudget, BeforeABuiltInStepTheClockDecides) {
  auto c = chain();
  auto s = at_step(c, clock_step, 100, 100);
  EXPECT_EQ(c.next_cost(s).how, step_cost::kind::clock);
  EXPECT_FALSE(past_budget(c, s, budget(1'000, 10), 1'000));
  EXPECT_TRUE(past_budget(c, s, budget(1'000, 10), 1'001));
  EXPECT_EQ(s.source_pixels, 0);
}

}  // namespace
}  // namespace conveyor

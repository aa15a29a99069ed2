// The transform chain: the ImageNet recipe end to end on real JPEG bytes, and results that
// depend only on (epoch seed, sample id), whatever thread runs each step and however often a
// sample is paused.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/sample_seed.hpp"
#include "core/transforms/transform_chain.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

transform_chain imagenet_chain() {
  auto chain = transform_chain::build(imagenet_train_recipe());
  EXPECT_TRUE(chain) << chain.error().what();
  return std::move(*chain);
}

sample_state make_sample(std::uint64_t id, std::vector<std::uint8_t> jpeg,
                         std::uint64_t epoch_seed = 2024) {
  sample_state s;
  s.sample_id = id;
  s.key = "img_" + std::to_string(id) + ".jpg";
  s.epoch_seed = epoch_seed;
  s.encoded = std::move(jpeg);
  imagenet_chain().start(s, static_cast<std::int32_t>(id % 10));
  return s;
}

// The "image" field of a sample the chain has finished (the recipe's fields: label, image).
const host_array& image_array(const sample_state& s) {
  return s.fields[1].array;
}

/// JPEGs of assorted sizes, one per sample id.
std::vector<std::vector<std::uint8_t>> assorted_jpegs(std::size_t n) {
  std::mt19937_64 rng(77);
  std::vector<std::vector<std::uint8_t>> out;
  for (std::size_t i = 0; i < n; ++i) {
    int w = 96 + static_cast<int>(rng() % 300);
    int h = 96 + static_cast<int>(rng() % 300);
    out.push_back(testing::make_jpeg(w, h, i));
  }
  return out;
}

std::vector<std::uint8_t> run_all_output(const transform_chain& chain, sample_state s) {
  auto ok = chain.run_all(s);
  EXPECT_TRUE(ok) << ok.error().what();
  return {image_array(s).bytes.begin(), image_array(s).bytes.end()};
}

TEST(TransformChain, ImagenetRecipeGivesFloatTensor3x224x224) {
  auto chain = imagenet_chain();
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain.step(0).name(), "decode");
  EXPECT_EQ(chain.step(1).name(), "random_resized_crop");
  EXPECT_EQ(chain.step(2).name(), "flip");
  EXPECT_EQ(chain.step(3).name(), "normalize");

  auto s = make_sample(5, testing::make_jpeg(500, 375, 5));
  auto ok = chain.run_all(s);
  ASSERT_TRUE(ok) << ok.error().what();
  EXPECT_TRUE(chain.done(s));
  EXPECT_EQ(s.next_step, 4u);
  EXPECT_EQ(image_array(s).type, dtype::float32);
  EXPECT_EQ(describe(image_array(s)), "float32 [3, 224, 224]");
  EXPECT_EQ(image_array(s).bytes.size(), std::size_t{3} * 224 * 224 * sizeof(float));
  ASSERT_EQ(s.step_ns.size(), 4u);
  for (auto ns : s.step_ns) {
    EXPECT_GE(ns, 0);
  }
  EXPECT_TRUE(s.encoded.empty());
  auto fields = chain.take_fields(s);
  ASSERT_TRUE(fields) << fields.error().what();
  ASSERT_EQ(chain.schema().fields.size(), 2u);
  EXPECT_EQ(chain.schema().fields[0].name, "label");
  EXPECT_EQ(chain.schema().fields[1].name, "image");
  EXPECT_EQ(*(*fields)[0].data<std::int32_t>(), 5);
  EXPECT_EQ(describe(chain.schema().fields[1].type), "float32 [3, 224, 224]");
}

TEST(TransformChain, RunNextGoesOneStepAtATimeAndStopsAtTheEnd) {
  auto chain = imagenet_chain();
  auto s = make_sample(1, testing::make_jpeg(120, 90, 1));
  for (std::size_t i = 0; i < chain.size(); ++i) {
    EXPECT_FALSE(chain.done(s));
    auto ok = chain.run_next(s);
    ASSERT_TRUE(ok) << ok.error().what();
    EXPECT_EQ(s.next_step, i + 1);
    EXPECT_EQ(s.step_ns.size(), i + 1);
  }
  EXPECT_TRUE(chain.done(s));
  auto extra = chain.run_next(s);
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().code(), errc::invalid_argument);
  EXPECT_EQ(s.step_ns.size(), chain.size());
}

TEST(TransformChain, SameOutputOnAnyThreadInAnyOrder) {
  auto chain = imagenet_chain();
  const auto jpegs = assorted_jpegs(64);
  std::vector<std::vector<std::uint8_t>> reference;
  for (std::size_t id = 0; id < jpegs.size(); ++id) {
    reference.push_back(run_all_output(chain, make_sample(id, jpegs[id])));
  }

  // Each thread does every sample in its own order; threads 2 and 3 also interleave samples
  // step by step, so that every sample is paused between all of its steps.
  constexpr int threads = 4;
  std::vector<std::vector<std::vector<std::uint8_t>>> results(
      threads, std::vector<std::vector<std::uint8_t>>(jpegs.size()));
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<std::size_t> order(jpegs.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(t));
      if (t < 2) {
        for (std::size_t id : order) {
          results[t][id] = run_all_output(chain, make_sample(id, jpegs[id]));
        }
        return;
      }
      std::vector<sample_state> samples;
      samples.reserve(order.size());
      for (std::size_t id : order) {
        samples.push_back(make_sample(id, jpegs[id]));
      }
      for (std::size_t step = 0; step < chain.size(); ++step) {
        for (auto& s : samples) {
          EXPECT_TRUE(chain.run_next(s));
        }
      }
      for (auto& s : samples) {
        results[t][s.sample_id].assign(image_array(s).bytes.begin(), image_array(s).bytes.end());
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  for (int t = 0; t < threads; ++t) {
    for (std::size_t id = 0; id < jpegs.size(); ++id) {
      EXPECT_EQ(results[t][id], reference[id]) << "thread " << t << ", sample " << id;
    }
  }
}

TEST(TransformChain, PausedAndResumedOnAnotherThreadEqualsRunAll) {
  auto chain = imagenet_chain();
  const auto jpeg = testing::make_jpeg(500, 375, 8);
  const auto reference = run_all_output(chain, make_sample(8, jpeg));

  auto s = make_sample(8, jpeg);
  std::thread first([&] {
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(chain.run_next(s));
    }
  });
  first.join();
  EXPECT_EQ(s.next_step, 2u);
  EXPECT_EQ(s.fields[1].image.size(), cv::Size(224, 224));  // cropped, not yet normalised
  EXPECT_TRUE(image_array(s).bytes.empty());

  sample_state moved = std::move(s);  // handed to another actor
  std::thread second([&] { EXPECT_TRUE(chain.run_all(moved)); });
  second.join();
  EXPECT_EQ(
      std::vector<std::uint8_t>(image_array(moved).bytes.begin(), image_array(moved).bytes.end()),
      reference);
  EXPECT_EQ(moved.step_ns.size(), chain.size());
}

TEST(TransformChain, RandomnessFollowsSampleIdAndEpochSeed) {
  auto chain = imagenet_chain();
  const auto jpeg = testing::make_jpeg(500, 375, 3);
  const auto a = run_all_output(chain, make_sample(1, jpeg, 10));
  EXPECT_EQ(run_all_output(chain, make_sample(1, jpeg, 10)), a);
  EXPECT_NE(run_all_output(chain, make_sample(2, jpeg, 10)), a);  // another sample id
  EXPECT_NE(run_all_output(chain, make_sample(1, jpeg, 11)), a);  // another epoch
}

TEST(TransformChain, FailedStepLeavesTheSampleWhereItWas) {
  auto chain = imagenet_chain();
  auto jpeg = testing::make_jpeg(200, 150, 4);
  jpeg.resize(jpeg.size() / 2);
  auto s = make_sample(31, jpeg);
  auto failed = chain.run_all(s);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), errc::decode_error);
  EXPECT_NE(failed.error().message().find("sample 31 (key 'img_31.jpg'), step decode"),
            std::string::npos)
      << failed.error().message();
  EXPECT_EQ(s.next_step, 0u);
  EXPECT_TRUE(s.step_ns.empty());
  EXPECT_EQ(s.encoded, jpeg);
}

TEST(TransformChain, BuildRejectsFieldsThatDoNotAddUp) {
  random_resized_crop_spec crop;
  crop.height = crop.width = 224;
  flip_spec flip_boxes;
  flip_boxes.fields = {"image", "boxes"};
  struct bad_chain {
    std::vector<transform_spec> specs;
    std::size_t step;
    std::string says;
  };
  const std::vector<bad_chain> bad{
      {{crop, normalize_spec{}}, 0, "field 'image' is not made by any step before it"},
      {{decode_spec{}, crop}, 1, "still an image when the chain ends"},
      {{decode_spec{}, normalize_spec{}, flip_spec{}}, 2, "not an image"},
      {{decode_spec{}, flip_boxes, to_uint8_spec{}}, 1, "field 'boxes' is not made"},
      {{decode_spec{}, normalize_spec{}, to_uint8_spec{}}, 2, "not an image"}};
  for (const auto& b : bad) {
    std::size_t failed = 99;
    auto chain = transform_chain::build(b.specs, &failed);
    ASSERT_FALSE(chain) << b.says;
    EXPECT_EQ(chain.error().code(), errc::invalid_config) << chain.error().what();
    EXPECT_EQ(failed, b.step) << chain.error().what();
    EXPECT_NE(chain.error().message().find(b.says), std::string::npos) << chain.error().what();
  }
  EXPECT_FALSE(transform_chain::build({}));
  EXPECT_TRUE(transform_chain::build({decode_spec{}, to_uint8_spec{}}));
}

TEST(TransformChain, BuildNamesTheInvalidTransform) {
  flip_spec bad_flip;
  bad_flip.p = 2.0;
  auto chain = transform_chain::build({decode_spec{}, bad_flip, normalize_spec{}});
  ASSERT_FALSE(chain);
  EXPECT_EQ(chain.error().code(), errc::invalid_argument);
  EXPECT_EQ(chain.error().message().rfind("transform 1 (flip): flip: p", 0), 0u)
      << chain.error().message();
}

TEST(SampleSeed, NeighbouringIdsAndStepsGetUnrelatedSeeds) {
  static_assert(step_seed(1, 2, 3) == step_seed(1, 2, 3));
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t id = 0; id < 50; ++id) {
    for (std::uint64_t step = 0; step < 5; ++step) {
      seeds.push_back(step_seed(7, id, step));
    }
  }
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(std::adjacent_find(seeds.begin(), seeds.end()), seeds.end());
  EXPECT_NE(step_seed(7, 1, 0), step_seed(8, 1, 0));
}

}  // namespace
}  // namespace conveyor

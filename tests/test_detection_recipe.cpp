// The detection recipe (config/examples/detection.toml) on a set of scripts/make-detection-set,
// through the embedding API: every box still covers its object's pixels after the resize to
// 800 / 1333 and the flip, images are padded to multiples of 32 with their own sizes in
// lengths, boxes and class ids are ragged with one row per object, and every sample comes
// exactly once per epoch.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "conveyor/pipeline.hpp"
#include "support/python_tars.hpp"

namespace conveyor {
namespace {

using testing::detection_set;

constexpr int samples = 40;
constexpr std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // the recipe's normalize
constexpr std::array<float, 3> stddev{0.229f, 0.224f, 0.225f};

/// One sample of a batch: its image (a view into the padded batch) and its objects.
struct sample_view {
  const float* pixels = nullptr;    ///< channel c, row y, column x: [(c * rows + y) * cols + x]
  std::int64_t rows = 0, cols = 0;  ///< the padded batch's
  int height = 0, width = 0;        ///< its own
  std::vector<std::array<float, 4>> boxes;
  std::vector<std::int64_t> classes;

  std::array<float, 3> rgb(int y, int x) const {
    std::array<float, 3> out{};
    for (int c = 0; c < 3; ++c) {
      float v = pixels[(c * rows + y) * cols + x];
      out[static_cast<std::size_t>(c)] =
          (v * stddev[static_cast<std::size_t>(c)] + mean[static_cast<std::size_t>(c)]) * 255.f;
    }
    return out;
  }
};

float distance(const std::array<float, 3>& a, const std::array<int, 3>& b) {
  float most = 0;
  for (std::size_t c = 0; c < 3; ++c) {
    most = std::max(most, std::abs(a[c] - static_cast<float>(b[c])));
  }
  return most;
}

/// The mean colour of the pixels (y, x) for y in [y0, y1), x in [x0, x1), clipped to the image.
std::array<float, 3> mean_colour(const sample_view& s, int y0, int y1, int x0, int x1) {
  std::array<float, 3> sum{};
  int n = 0;
  for (int y = std::max(y0, 0); y < std::min(y1, s.height); ++y) {
    for (int x = std::max(x0, 0); x < std::min(x1, s.width); ++x) {
      auto p = s.rgb(y, x);
      for (std::size_t c = 0; c < 3; ++c) {
        sum[c] += p[c];
      }
      ++n;
    }
  }
  for (auto& c : sum) {
    c /= static_cast<float>(std::max(n, 1));
  }
  return n == 0 ? std::array<float, 3>{-1000, -1000, -1000} : sum;
}

// Inside each box (a few pixels in from its edges: JPEG and the resize soften them) the
// pixels are its class's colour; just outside each edge they are not.
void expect_boxes_cover_their_objects(const sample_view& s, const detection_set& set,
                                      const std::string& key) {
  constexpr int in = 6;   // pixels in from an edge
  constexpr int out = 4;  // pixels out from an edge
  for (std::size_t k = 0; k < s.boxes.size(); ++k) {
    SCOPED_TRACE(key + " object " + std::to_string(k));
    const auto& b = s.boxes[k];
    const auto colour = set.palette.at(static_cast<std::size_t>(s.classes.at(k)));
    const int x0 = static_cast<int>(std::lround(b[0])), y0 = static_cast<int>(std::lround(b[1]));
    const int x1 = static_cast<int>(std::lround(b[2])), y1 = static_cast<int>(std::lround(b[3]));
    ASSERT_TRUE(0 <= x0 && x0 < x1 && x1 <= s.width && 0 <= y0 && y0 < y1 && y1 <= s.height)
        << x0 << " " << y0 << " " << x1 << " " << y1 << " in " << s.width << " x " << s.height;
    EXPECT_LT(distance(mean_colour(s, y0 + in, y1 - in, x0 + in, x1 - in), colour), 12.f);
    const std::array<std::array<int, 4>, 4> beside{{{y0 + in, y1 - in, x0 - out - 1, x0 - out},
                                                    {y0 + in, y1 - in, x1 + out, x1 + out + 1},
                                                    {y0 - out - 1, y0 - out, x0 + in, x1 - in},
                                                    {y1 + out, y1 + out + 1, x0 + in, x1 - in}}};
    for (const auto& r : beside) {
      auto there = mean_colour(s, r[0], r[1], r[2], r[3]);
      if (there[0] > -1000) {  // inside the image
        EXPECT_GT(distance(there, colour), 60.f)
            << "beside the box: rows " << r[0] << " cols " << r[2];
      }
    }
  }
}

// The samples of `b`, with their padded images' views and their ragged rows.
std::vector<sample_view> samples_of(const batch& b) {
  auto image = b.field("image");
  auto boxes = b.field("boxes");
  auto classes = b.field("classes");
  EXPECT_TRUE(image && boxes && classes);
  EXPECT_EQ(image->mode, collate::pad);
  EXPECT_EQ(image->type, dtype::float32);
  EXPECT_EQ(image->length_axes, 2);
  EXPECT_EQ(boxes->mode, collate::ragged);
  EXPECT_EQ(classes->mode, collate::ragged);
  EXPECT_EQ(image->shape[2] % 32, 0);
  EXPECT_EQ(image->shape[3] % 32, 0);
  std::vector<sample_view> out(b.size());
  const auto* box_rows = static_cast<const float*>(boxes->data);
  const auto* class_rows = static_cast<const std::int64_t*>(classes->data);
  for (std::size_t i = 0; i < b.size(); ++i) {
    auto& s = out[i];
    s.rows = image->shape[2];
    s.cols = image->shape[3];
    s.pixels = static_cast<const float*>(image->data) + i * 3 * s.rows * s.cols;
    s.height = image->lengths[2 * i];
    s.width = image->lengths[2 * i + 1];
    EXPECT_EQ(boxes->offsets[i + 1] - boxes->offsets[i],
              classes->offsets[i + 1] - classes->offsets[i]);
    for (auto r = boxes->offsets[i]; r < boxes->offsets[i + 1]; ++r) {
      s.boxes.push_back(
          {box_rows[4 * r], box_rows[4 * r + 1], box_rows[4 * r + 2], box_rows[4 * r + 3]});
    }
    for (auto r = classes->offsets[i]; r < classes->offsets[i + 1]; ++r) {
      s.classes.push_back(class_rows[r]);
    }
  }
  return out;
}

// maskrcnn_benchmark's size: the shorter side 800, or the longer side (about) 1333.
void expect_mask_rcnn_size(const sample_view& s) {
  const int shorter = std::min(s.height, s.width), longer = std::max(s.height, s.width);
  EXPECT_LE(longer, 1333);
  EXPECT_TRUE(shorter == 800 || longer >= 1330) << s.width << " x " << s.height;
  EXPECT_LE(s.height, s.rows);
  EXPECT_LE(s.width, s.cols);
}

// The pixels past a sample's own size are the pad value (0).
void expect_padding_is_zero(const sample_view& s) {
  for (int c = 0; c < 3; ++c) {
    for (std::int64_t y = 0; y < s.rows; ++y) {
      for (std::int64_t x = (y < s.height ? s.width : 0); x < s.cols; ++x) {
        ASSERT_EQ(s.pixels[(c * s.rows + y) * s.cols + x], 0.f) << "at " << y << ", " << x;
      }
    }
  }
}

TEST(DetectionRecipe, EveryBoxStillCoversItsObjectAfterResizeAndFlip) {
  testing::temp_dir dir;
  auto set = testing::make_detection_set(dir, samples, 16);
  auto p = pipeline::open(set.recipe, {"dataset.path=" + set.dir.string(), "gpus=1",
                                       "pipeline.preprocessors=2", "trainer.epochs=2"});
  ASSERT_TRUE(p) << p.error().what();
  // Per sample id: its boxes in each epoch (to see the flip move them).
  std::map<std::uint64_t, std::vector<std::vector<std::array<float, 4>>>> boxes_by_epoch;
  std::map<std::uint64_t, int> widths;
  std::size_t objects = 0;
  for (std::uint64_t e = 0; e < p->epochs(); ++e) {
    std::set<std::uint64_t> seen;
    for (auto& b : p->epoch(e, 0)) {
      auto views = samples_of(b);
      std::int64_t tallest = 0, widest = 0;
      for (std::size_t i = 0; i < views.size(); ++i) {
        const auto& s = views[i];
        SCOPED_TRACE(b.keys()[i]);
        EXPECT_TRUE(seen.insert(b.sample_ids()[i]).second);
        expect_mask_rcnn_size(s);
        expect_padding_is_zero(s);
        expect_boxes_cover_their_objects(s, set, b.keys()[i]);
        tallest = std::max<std::int64_t>(tallest, s.height);
        widest = std::max<std::int64_t>(widest, s.width);
        boxes_by_epoch[b.sample_ids()[i]].push_back(s.boxes);
        widths[b.sample_ids()[i]] = s.width;
        objects += s.boxes.size();
      }
      if (!views.empty()) {  // the batch's largest, rounded up to a multiple of 32
        EXPECT_EQ(views[0].rows, (tallest + 31) / 32 * 32);
        EXPECT_EQ(views[0].cols, (widest + 31) / 32 * 32);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(samples)) << "epoch " << e;
  }
  EXPECT_GT(objects, static_cast<std::size_t>(samples));
  // The flip draws per (epoch, sample): some samples come mirrored in one epoch only.
  int mirrored = 0, same = 0;
  for (const auto& [id, epochs] : boxes_by_epoch) {
    ASSERT_EQ(epochs.size(), 2u);
    if (epochs[0].empty()) {
      continue;
    }
    const auto& a = epochs[0][0];
    const auto& b = epochs[1][0];
    const float w = static_cast<float>(widths[id]);
    same += a == b ? 1 : 0;
    mirrored += std::abs(a[0] - (w - b[2])) < 1e-3f && std::abs(a[2] - (w - b[0])) < 1e-3f ? 1 : 0;
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_GT(same, 0);
  EXPECT_EQ(p->report().quarantined, 0u);
}

}  // namespace
}  // namespace conveyor

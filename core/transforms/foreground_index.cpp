#include "core/transforms/foreground_index.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

namespace conveyor {
namespace {

/// Objects found so far: provisional labels joined by union-find. A label's root is the
/// smallest label of its set, which is the label of the object's first voxel in raster
/// order: objects sort by it as scipy numbers them.
class object_table {
 public:
  std::uint32_t make(std::uint8_t value, std::int64_t x, std::int64_t y, std::int64_t z) {
    auto id = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(id);
    values_.push_back(value);
    boxes_.push_back({axis_range{x, x + 1}, axis_range{y, y + 1}, axis_range{z, z + 1}});
    return id;
  }
  std::size_t size() const noexcept { return parent_.size(); }
  std::uint32_t root(std::uint32_t id) {
    while (parent_[id] != id) {
      parent_[id] = parent_[parent_[id]];
      id = parent_[id];
    }
    return id;
  }
  /// Joins the sets of a and b; returns the root.
  std::uint32_t join(std::uint32_t a, std::uint32_t b) {
    a = root(a);
    b = root(b);
    if (a != b) {
      parent_[std::max(a, b)] = std::min(a, b);
    }
    return std::min(a, b);
  }
  void grow(std::uint32_t id, std::int64_t x, std::int64_t y, std::int64_t z) {
    auto& box = boxes_[id];
    for (auto [axis, v] : {std::pair{0, x}, std::pair{1, y}, std::pair{2, z}}) {
      box[axis].start = std::min(box[axis].start, v);
      box[axis].stop = std::max(box[axis].stop, v + 1);
    }
  }
  /// Every object: (value, box) in raster order of its first voxel.
  std::vector<std::pair<std::uint8_t, volume_box>> objects() {
    std::map<std::uint32_t, volume_box> merged;
    for (std::uint32_t id = 0; id < parent_.size(); ++id) {
      auto r = root(id);
      auto [it, fresh] = merged.try_emplace(r, boxes_[id]);
      if (!fresh) {
        for (int a = 0; a < 3; ++a) {
          it->second[a].start = std::min(it->second[a].start, boxes_[id][a].start);
          it->second[a].stop = std::max(it->second[a].stop, boxes_[id][a].stop);
        }
      }
    }
    std::vector<std::pair<std::uint8_t, volume_box>> out;
    for (const auto& [r, box] : merged) {
      out.emplace_back(values_[r], box);
    }
    return out;
  }

 private:
  std::vector<std::uint32_t> parent_;
  std::vector<std::uint8_t> values_;
  std::vector<volume_box> boxes_;
};

constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

/// One slab's voxels labelled against the slab before (6-connectivity: z-1, y-1, x-1), with
/// at most max_label_pieces objects: the voxel that would start one more is where it stops.
struct slab_labeller {
  std::int64_t Y, Z;
  object_table& objects;
  std::vector<std::uint8_t> previous;  ///< the slab before (empty for x == 0)
  std::vector<std::uint32_t> previous_ids, ids;

  /// The voxel (y, z) of slab x that would have made one piece too many; nullopt when the
  /// whole slab is labelled.
  std::optional<std::pair<std::int64_t, std::int64_t>> label(std::int64_t x,
                                                             const std::uint8_t* slab) {
    ids.assign(static_cast<std::size_t>(Y * Z), none);
    for (std::int64_t y = 0; y < Y; ++y) {
      const auto* row = slab + y * Z;
      for (std::int64_t z = 0; z < Z; ++z) {
        if (row[z] == 0) {
          continue;
        }
        const auto id = label_voxel(x, y, z, slab);
        if (id == none) {
          return std::pair{y, z};
        }
        ids[static_cast<std::size_t>(y * Z + z)] = id;
      }
    }
    previous.assign(slab, slab + Y * Z);
    std::swap(previous_ids, ids);
    return std::nullopt;
  }

  std::uint32_t label_voxel(std::int64_t x, std::int64_t y, std::int64_t z,
                            const std::uint8_t* slab) {
    const auto at = static_cast<std::size_t>(y * Z + z);
    const auto v = slab[at];
    std::uint32_t id = none;
    auto meet = [&](std::uint32_t other) {
      id = id == none ? objects.root(other) : objects.join(id, other);
    };
    if (z > 0 && slab[at - 1] == v) {
      meet(ids[at - 1]);
    }
    if (y > 0 && slab[at - static_cast<std::size_t>(Z)] == v) {
      meet(ids[at - static_cast<std::size_t>(Z)]);
    }
    if (!previous.empty() && previous[at] == v) {
      meet(previous_ids[at]);
    }
    if (id == none) {
      return objects.size() < max_label_pieces ? objects.make(v, x, y, z) : none;
    }
    objects.grow(id, x, y, z);
    return id;
  }
};

std::int64_t box_volume(const volume_box& box) {
  return box[0].extent() * box[1].extent() * box[2].extent();
}

std::string voxel_text(std::int64_t c, std::int64_t x, std::int64_t y, std::int64_t z) {
  return "(" + std::to_string(c) + ", " + std::to_string(x) + ", " + std::to_string(y) + ", " +
         std::to_string(z) + ")";
}

}  // namespace

expected<case_index> build_case_index(const volume_part& label, int max_class) {
  if (label.channels() != 1) {
    return error{errc::decode_error, "part '" + label.name + "': a label of " +
                                         std::to_string(label.channels()) +
                                         " channels (the recipe reads one)"};
  }
  // Not a structured binding: a lambda may not capture one in C++17 (clang refuses it).
  const auto extents = label.extents();
  const std::int64_t Y = extents[1];
  const std::int64_t Z = extents[2];
  object_table objects;
  slab_labeller labeller{Y, Z, objects, {}, {}, {}};
  auto scanned = for_each_slab(label, [&](std::int64_t x, const std::uint8_t* slab) {
    const auto* end = slab + Y * Z;
    const auto* bad = std::find_if(slab, end, [&](std::uint8_t v) { return v > max_class; });
    if (bad != end) {
      const auto at = bad - slab;
      return expected<void>(error{errc::decode_error, "part '" + label.name + "': class " +
                                                          std::to_string(*bad) + " at " +
                                                          voxel_text(0, x, at / Z, at % Z) +
                                                          " (the recipe's classes are 0.." +
                                                          std::to_string(max_class) + ")"});
    }
    if (auto full = labeller.label(x, slab)) {
      return expected<void>(
          error{errc::decode_error, "part '" + label.name + "': more than " +
                                        std::to_string(max_label_pieces) +
                                        " separate foreground pieces by voxel " +
                                        voxel_text(0, x, full->first, full->second) +
                                        " (a segmentation has a handful of objects)"});
    }
    return expected<void>();
  });
  if (!scanned) {
    return std::move(scanned).error();
  }
  std::map<std::uint8_t, std::vector<volume_box>> by_class;  // raster order within a class
  for (auto& [value, box] : objects.objects()) {
    by_class[value].push_back(box);
  }
  case_index out;
  for (auto& [value, boxes] : by_class) {
    std::stable_sort(boxes.begin(), boxes.end(), [](const volume_box& a, const volume_box& b) {
      return box_volume(a) < box_volume(b);
    });
    auto first = boxes.size() > 2 ? boxes.end() - 2 : boxes.begin();
    out.classes.push_back({value, std::vector<volume_box>(first, boxes.end())});
  }
  return out;
}

expected<void> check_finite(const volume_part& image) {
  const auto [X, Y, Z] = image.extents();
  return for_each_slab(image, [&, X = X, Y = Y, Z = Z](std::int64_t i, const std::uint8_t* bytes) {
    const auto n = static_cast<std::size_t>(Y * Z);
    std::vector<float> slab(n);
    std::memcpy(slab.data(), bytes, n * sizeof(float));
    // Summing is one vectorised pass; only a sum that is not finite needs a closer look.
    float sum = std::accumulate(slab.begin(), slab.end(), 0.0f,
                                [](float a, float b) { return a + b * 0.0f; });
    if (std::isfinite(sum)) {
      return expected<void>();
    }
    auto at = static_cast<std::int64_t>(
        std::find_if(slab.begin(), slab.end(), [](float v) { return !std::isfinite(v); }) -
        slab.begin());
    return expected<void>(
        error{errc::decode_error,
              "part '" + image.name +
                  "': " + (std::isnan(slab[static_cast<std::size_t>(at)]) ? "NaN" : "infinity") +
                  " at " + voxel_text(i / X, i % X, at / Z, at % Z)});
  });
}

case_index_memo::entry case_index_memo::find(std::uint64_t id, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.first == key ? it->second.second : nullptr;
}

case_index_memo::entry case_index_memo::keep(std::uint64_t id, const std::string& key,
                                             expected<case_index> made) {
  auto fresh = std::make_shared<const expected<case_index>>(std::move(made));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = entries_[id];
  if (slot.second == nullptr || slot.first != key) {
    slot = {key, std::move(fresh)};
  }
  return slot.second;
}

}  // namespace conveyor

#include "core/delivery/host_batch.hpp"

#include "core/delivery/normalized_plane_writer.hpp"

#include <cstring>

namespace conveyor {
namespace {

bool same_shape(const host_tensor& a, const host_tensor& b) {
  return a.type == b.type && a.channels == b.channels && a.height == b.height && a.width == b.width;
}

std::string shape_text(const host_tensor& t) {
  return std::to_string(t.channels) + "x" + std::to_string(t.height) + "x" +
         std::to_string(t.width) + " " + std::string(name_of(t.type));
}

}  // namespace

expected<void> check_uniform(const batch_plan& plan) {
  for (const auto& sample : plan.samples) {
    const auto& first = *plan.samples.front();
    if (!same_shape(sample->tensor, first.tensor)) {
      return error{errc::invalid_config,
                   "sample " + sample->key + " came out " + shape_text(sample->tensor) + " but " +
                       first.key + " came out " + shape_text(first.tensor) +
                       ": the transform chain must produce one fixed size (crop or resize to "
                       "[height, width])"};
    }
  }
  return {};
}

void describe_batch(const batch_plan& plan, host_batch& into) {
  into.epoch = plan.epoch;
  into.index = plan.index;
  into.gpu = plan.gpu;
  into.last_in_epoch = plan.last_in_epoch;
  into.labels.clear();
  into.sample_ids.clear();
  into.keys.clear();
  into.shape = {0, 0, 0, 0};
  if (plan.samples.empty()) {
    return;
  }
  const auto& first = plan.samples.front()->tensor;
  into.type = first.type;
  into.shape = {static_cast<int>(plan.samples.size()), first.channels, first.height, first.width};
  for (const auto& s : plan.samples) {
    into.labels.push_back(s->label);
    into.sample_ids.push_back(s->ticket.sample_id);
    into.keys.push_back(s->key);
  }
}

void write_samples(const batch_plan& plan, std::uint8_t* dest) {
  for (const auto& s : plan.samples) {
    const auto& bytes = s->tensor.bytes;
    std::memcpy(dest, bytes.data(), bytes.size());
    dest += bytes.size();
  }
}

void write_normalized_samples(const batch_plan& plan, const normalize_table& table,
                              std::uint8_t* dest) {
  auto* out = reinterpret_cast<float*>(dest);
  for (const auto& s : plan.samples) {
    const auto& t = s->tensor;
    const std::size_t plane = static_cast<std::size_t>(t.height) * t.width;
    for (int c = 0; c < 3; ++c) {
      write_normalized_plane(table, c, t.bytes.data() + c * plane, plane, out);
      out += plane;
    }
  }
  store_fence();
}

}  // namespace conveyor

#include "core/host_batch.hpp"

#include <cstring>

namespace conveyor {
namespace {

bool same_shape(const host_tensor& a, const host_tensor& b) {
  return a.type == b.type && a.channels == b.channels && a.height == b.height && a.width == b.width;
}

std::string shape_text(const host_tensor& t) {
  return std::to_string(t.channels) + "x" + std::to_string(t.height) + "x" +
         std::to_string(t.width) + (t.type == dtype::float32 ? " float32" : " uint8");
}

}  // namespace

expected<void> collate(const batch_plan& plan, host_batch& into) {
  into.epoch = plan.epoch;
  into.index = plan.index;
  into.gpu = plan.gpu;
  into.last_in_epoch = plan.last_in_epoch;
  into.labels.clear();
  into.sample_ids.clear();
  into.keys.clear();
  if (plan.samples.empty()) {
    into.shape = {0, 0, 0, 0};
    into.bytes.clear();
    return {};
  }
  const auto& first = plan.samples.front()->tensor;
  auto sample_bytes = first.bytes.size();
  into.type = first.type;
  into.shape = {static_cast<int>(plan.samples.size()), first.channels, first.height, first.width};
  into.bytes.resize(sample_bytes * plan.samples.size());
  for (std::size_t i = 0; i < plan.samples.size(); ++i) {
    const auto& s = *plan.samples[i];
    if (!same_shape(s.tensor, first)) {
      return error{errc::invalid_config,
                   "sample " + s.key + " came out " + shape_text(s.tensor) + " but " +
                       plan.samples.front()->key + " came out " + shape_text(first) +
                       ": the transform chain must produce one fixed size (crop or resize to "
                       "[height, width])"};
    }
    std::memcpy(into.bytes.data() + i * sample_bytes, s.tensor.bytes.data(), sample_bytes);
    into.labels.push_back(s.label);
    into.sample_ids.push_back(s.ticket.sample_id);
    into.keys.push_back(s.key);
  }
  return {};
}

}  // namespace conveyor

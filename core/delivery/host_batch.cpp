#include "core/delivery/host_batch.hpp"

namespace conveyor {

const void* host_batch::values_of(std::size_t i) const noexcept {
  if (normalized_field == i) {
    return normalized;
  }
  const auto offset = fields[i].values;
  return device >= 0 ? static_cast<const std::uint8_t*>(device_data) + offset : host() + offset;
}

dtype host_batch::type_of(std::size_t i) const noexcept {
  return normalized_field == i ? normalized_type : fields[i].type;
}

void describe_batch(const batch_plan& plan, const sample_schema& schema, host_batch& into) {
  into.epoch = plan.epoch;
  into.index = plan.index;
  into.gpu = plan.gpu;
  into.last_in_epoch = plan.last_in_epoch;
  into.labels.clear();
  into.sample_ids.clear();
  into.keys.clear();
  const auto label = schema.index_of(label_field_name);
  const bool labelled = label && schema.fields[*label].type.type == dtype::int32 &&
                        schema.fields[*label].type.rank == 0;
  for (const auto& s : plan.samples) {
    if (labelled) {
      into.labels.push_back(*s->fields[*label].data<std::int32_t>());
    }
    into.sample_ids.push_back(s->ticket.sample_id);
    into.keys.push_back(s->key);
  }
}

}  // namespace conveyor

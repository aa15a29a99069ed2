#include "core/batching/epoch_ledger.hpp"

namespace conveyor {

epoch_summary& epoch_summary::operator+=(const epoch_summary& o) noexcept {
  delivered += o.delivered;
  quarantined += o.quarantined;
  filtered += o.filtered;
  duplicates += o.duplicates;
  lost += o.lost;
  return *this;
}

epoch_ledger::epoch_marks& epoch_ledger::marks_of(std::uint64_t epoch) {
  auto& e = epochs_[epoch];
  if (e.marks.empty()) {
    e.marks.assign(dataset_size_, mark::none);
  }
  return e;
}

void epoch_ledger::deliver(std::uint64_t epoch, std::uint64_t sample_id) {
  auto& e = marks_of(epoch);
  if (sample_id >= e.marks.size()) {
    ++e.counts.duplicates;  // an id that is not in the dataset can only be a bookkeeping error
    return;
  }
  auto& m = e.marks[sample_id];
  if (m == mark::delivered) {
    ++e.counts.duplicates;
    return;
  }
  if (m == mark::quarantined) {
    --e.counts.quarantined;  // it made it after all: delivered wins
  } else if (m == mark::filtered) {
    --e.counts.filtered;
  }
  m = mark::delivered;
  ++e.counts.delivered;
}

void epoch_ledger::quarantine(quarantine_entry entry) {
  auto& e = marks_of(entry.epoch);
  if (entry.sample_id < e.marks.size() && e.marks[entry.sample_id] == mark::none) {
    e.marks[entry.sample_id] = mark::quarantined;
    ++e.counts.quarantined;
  }
  quarantined_.push_back(std::move(entry));
}

void epoch_ledger::filter(std::uint64_t epoch, std::uint64_t sample_id) {
  auto& e = marks_of(epoch);
  if (sample_id < e.marks.size() && e.marks[sample_id] == mark::none) {
    e.marks[sample_id] = mark::filtered;
    ++e.counts.filtered;
  }
}

epoch_summary epoch_ledger::summary(std::uint64_t epoch) const {
  auto it = epochs_.find(epoch);
  if (it == epochs_.end()) {
    epoch_summary s;
    s.lost = per_epoch_;
    return s;
  }
  auto s = it->second.counts;
  const auto accounted = s.delivered + s.quarantined + s.filtered;
  s.lost = per_epoch_ > accounted ? per_epoch_ - accounted : 0;
  return s;
}

epoch_summary epoch_ledger::totals() const {
  epoch_summary total;
  for (const auto& [epoch, marks] : epochs_) {
    total += summary(epoch);
  }
  return total;
}

bool epoch_ledger::complete(std::uint64_t epoch) const {
  return summary(epoch).lost == 0;
}

}  // namespace conveyor

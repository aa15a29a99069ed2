#include "core/storage/webdataset_index.hpp"

#include "core/storage/record_parts.hpp"

namespace conveyor {

std::optional<member_name> split_member_name(std::string_view path) {
  const auto slash = path.rfind('/');
  const auto base_at = slash == std::string_view::npos ? 0 : slash + 1;
  const auto dot = path.find('.', base_at);
  if (dot == std::string_view::npos || dot == base_at) {
    return std::nullopt;
  }
  return member_name{std::string(path.substr(0, dot)),
                     part_name_of_extension(path.substr(dot + 1))};
}

void webdataset_index::add_tar(std::string tar_name, const tar_listing& listing) {
  tars_.push_back(std::move(tar_name));
  tar_first_sample_ = samples_.size();
  skipped_ += listing.skipped_members;
  for (const auto& m : listing.members) {
    add_member(m);
  }
  if (listing.damage) {
    add_damage(*listing.damage);
  }
}

void webdataset_index::start_sample(std::string key, std::uint64_t header_offset) {
  samples_.push_back(sample{std::move(key), static_cast<std::uint32_t>(tars_.size() - 1),
                            header_offset, parts_.size(), 0});
}

void webdataset_index::add_member(const tar_member& m) {
  auto split = split_member_name(m.name);
  if (!split) {
    ++skipped_;
    return;
  }
  if (samples_.size() == tar_first_sample_ || samples_.back().key != split->key) {
    start_sample(split->key, m.header_offset);
  }
  const auto id = samples_.size() - 1;
  auto& s = samples_.back();
  if (!is_part_name(split->part)) {
    refuse(id, "member \"" + m.name + "\" at offset " + std::to_string(m.header_offset) +
                   " gives the part name \"" + split->part +
                   "\", which is not 1..255 bytes of [A-Za-z0-9._-]");
    return;
  }
  const auto name = name_id(split->part);
  auto& seen = seen_[name];
  if (seen.sample == id + 1) {
    refuse(id, "part \"" + split->part + "\" is there twice (members with data at offsets " +
                   std::to_string(seen.data_offset) + " and " + std::to_string(m.data_offset) +
                   ")");
    return;
  }
  seen = name_seen{id + 1, m.data_offset};
  parts_.push_back(part{name, m.data_offset, m.size});
  ++s.part_count;
}

void webdataset_index::add_damage(const tar_damage& d) {
  auto split = split_member_name(d.name);
  const bool in_last_sample =
      split && samples_.size() > tar_first_sample_ && samples_.back().key == split->key;
  if (!in_last_sample) {
    start_sample(split ? split->key : "(damaged at offset " + std::to_string(d.offset) + ")",
                 d.offset);
  }
  refuse(samples_.size() - 1, d.reason);
}

void webdataset_index::finish() {
  // Samples known only from damage have no parts and keys that may be made up: they are
  // refused already, and are no reason to refuse others.
  std::unordered_map<std::string_view, std::vector<std::uint64_t>> by_key;
  for (std::uint64_t id = 0; id < samples_.size(); ++id) {
    if (samples_[id].part_count > 0) {
      by_key[samples_[id].key].push_back(id);
    }
  }
  for (const auto& [key, ids] : by_key) {
    if (ids.size() > 1) {
      refuse_repeated_key(ids);
    }
  }
  for (auto& [id, problem] : problems_) {
    if (problem.more > 0) {
      problem.text += "; and " + std::to_string(problem.more) + " more";
    }
  }
}

// One text for all the samples of a key, naming the first few places: its size does not grow
// with how many samples have the key.
void webdataset_index::refuse_repeated_key(const std::vector<std::uint64_t>& ids) {
  std::string places;
  for (std::size_t i = 0; i < ids.size() && i < max_listed_problems; ++i) {
    places += (places.empty() ? "" : ", ") + place(ids[i]);
  }
  if (ids.size() > max_listed_problems) {
    places += " and " + std::to_string(ids.size() - max_listed_problems) + " more";
  }
  const auto why = "duplicate key: " + std::to_string(ids.size()) + " samples have it (" + places +
                   "); each is refused";
  for (auto id : ids) {
    refuse(id, why);
  }
}

const std::string* webdataset_index::problem(std::uint64_t id) const {
  auto it = problems_.find(id);
  return it == problems_.end() ? nullptr : &it->second.text;
}

std::uint32_t webdataset_index::name_id(const std::string& name) {
  auto [it, added] = name_ids_.emplace(name, static_cast<std::uint32_t>(names_.size()));
  if (added) {
    names_.push_back(name);
    seen_.emplace_back();
  }
  return it->second;
}

void webdataset_index::refuse(std::uint64_t id, const std::string& why) {
  auto& problem = problems_[id];
  if (problem.listed == max_listed_problems) {
    ++problem.more;
    return;
  }
  problem.text += (problem.text.empty() ? "" : "; ") + why;
  ++problem.listed;
}

std::string webdataset_index::place(std::uint64_t id) const {
  return tars_[samples_[id].tar] + " at offset " + std::to_string(samples_[id].header_offset);
}

}  // namespace conveyor

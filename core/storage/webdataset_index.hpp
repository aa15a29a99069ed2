#pragma once
/// The samples of a WebDataset tar set, grouped from the tars' member listings
/// (core/storage/tar_listing.hpp) by WebDataset's rule, with every problem confined to the
/// sample it concerns. Built in memory when the set is opened (nothing is stored): about 100
/// bytes per sample plus its key.
///
/// WebDataset's rule: a member's key is its path up to the first '.' of its base name, its
/// part name the rest after that '.', lowercased ("train/000123.seg.PNG": key "train/000123",
/// part "seg.png"). A member whose base name has no '.', or starts with one, belongs to no
/// sample and is skipped (as WebDataset does). Consecutive members with the same key are one
/// sample; samples are numbered in the order of the tars given, then of their first member.
///
/// Problems, each confined to its sample (read() refuses it naming the reason; nothing else is
/// lost):
///   - a part name that is not a valid part name (record_parts.hpp);
///   - the same part twice in a sample (both members named);
///   - a key that names two samples: the same key again later in the same tar, or in another
///     tar: every sample with that key is refused, each naming how many samples have it and
///     the first few places;
///   - damage that ended a tar's walk (tar_listing.hpp): given to the sample of the damaged
///     member when its name can be read and it is the tar's last sample, else to a sample of
///     its own with no parts (keyed by that name, or "(damaged at offset N)"). Members after a
///     damaged header cannot be found: they are not in the index.
/// A sample without a part its partner members would have (a lone `.jpg` without its `.cls`)
/// is no problem here: it has fewer parts, and the step that needs the missing one fails.
/// A sample's reasons are its first max_listed_problems, then how many more there were.
///
/// Cost: time and memory linear in the members, whatever a tar holds (a sample of 100,000
/// parts, 100,000 samples of one key): a repeated part is found by its name's last sample, and
/// a refusal's text is bounded.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/storage/tar_listing.hpp"

namespace conveyor {

/// A member's path split by WebDataset's rule.
struct member_name {
  std::string key;
  std::string part;  ///< lowercased
};

/// The key and part name of a member at `path`; nullopt when its base name has no '.' or
/// starts with one.
std::optional<member_name> split_member_name(std::string_view path);

/// Single-threaded while built (add_tar, then finish); immutable and safe to share after.
class webdataset_index {
 public:
  struct part {
    std::uint32_t name = 0;  ///< into part_names()
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };
  struct sample {
    std::string key;
    std::uint32_t tar = 0;
    std::uint64_t header_offset = 0;  ///< of its first member (or of the damage), for messages
    std::uint64_t first_part = 0;     ///< into parts()
    std::uint32_t part_count = 0;
  };

  /// Adds the samples of the next tar, named `tar_name` in messages.
  void add_tar(std::string tar_name, const tar_listing& listing);
  /// Refuses every sample whose key another sample has too, and closes the problems' texts.
  /// Call once, after the last tar.
  void finish();

  /// The reasons a refused sample's message gives at most, and the places of a repeated key.
  static constexpr std::uint32_t max_listed_problems = 4;

  std::uint64_t size() const noexcept { return samples_.size(); }
  const sample& at(std::uint64_t id) const { return samples_[id]; }
  const part* parts_begin(std::uint64_t id) const {
    return parts_.data() + samples_[id].first_part;
  }
  std::string_view part_name(const part& p) const { return names_[p.name]; }
  const std::string& tar_name(std::uint32_t tar) const { return tars_[tar]; }
  std::size_t tar_count() const noexcept { return tars_.size(); }
  /// Why sample `id` is refused; nullptr when it is not.
  const std::string* problem(std::uint64_t id) const;
  /// Problems found, samples refused for them, members skipped (non-regular, or no key).
  std::uint64_t refused_samples() const noexcept { return problems_.size(); }
  std::uint64_t skipped_members() const noexcept { return skipped_; }

 private:
  void add_member(const tar_member& m);
  void add_damage(const tar_damage& d);
  void start_sample(std::string key, std::uint64_t header_offset);
  std::uint32_t name_id(const std::string& name);
  void refuse(std::uint64_t id, const std::string& why);
  void refuse_repeated_key(const std::vector<std::uint64_t>& ids);
  std::string place(std::uint64_t id) const;

  /// Why a sample is refused: its first reasons, and how many more it had.
  struct problem_text {
    std::string text;
    std::uint32_t listed = 0;
    std::uint64_t more = 0;
  };
  /// Where a part name was last seen: in which sample (its index + 1; 0: never), at what data
  /// offset.
  struct name_seen {
    std::uint64_t sample = 0;
    std::uint64_t data_offset = 0;
  };

  std::vector<std::string> tars_;
  std::vector<std::string> names_;
  std::vector<name_seen> seen_;  ///< by name id
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::vector<sample> samples_;
  std::vector<part> parts_;
  std::unordered_map<std::uint64_t, problem_text> problems_;
  std::uint64_t skipped_ = 0;
  std::uint64_t tar_first_sample_ = 0;  ///< the first sample of the tar being added
};

}  // namespace conveyor

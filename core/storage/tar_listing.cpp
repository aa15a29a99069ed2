#include "core/storage/tar_listing.hpp"

#include <algorithm>
#include <array>

#include "core/storage/tar_format.hpp"

namespace conveyor {
namespace {

namespace tf = tar_format;

// One walk over one tar. Each step reads the header at `offset_` and moves past its member.
class tar_walk {
 public:
  explicit tar_walk(const byte_source& source) : source_(source), end_(source.size()) {}

  expected<tar_listing> run() {
    for (;;) {
      auto more = step();
      if (!more) {
        return std::move(more).error();
      }
      if (!*more) {
        return std::move(listing_);
      }
    }
  }

 private:
  // Extensions (a GNU long name, pax fields) waiting for the member they precede.
  struct pending {
    std::optional<std::string> name;
    std::optional<std::uint64_t> size;
    std::optional<std::uint64_t> first_header;
  };

  // False when the walk is over.
  expected<bool> step() {
    if (offset_ >= end_) {
      return stop_if_pending();
    }
    std::array<std::uint8_t, tf::block_size> block{};
    const auto available = std::min<std::uint64_t>(tf::block_size, end_ - offset_);
    if (auto ok = source_.read_at(offset_, block.data(), available); !ok) {
      return std::move(ok).error();
    }
    if (tf::is_zero_block(block.data())) {  // the end of the archive (or zero padding)
      return stop_if_pending();
    }
    if (available < tf::block_size) {
      return damaged(
          tf::readable_name(block.data(), available),
          "the file ends inside the member header at offset " + at(offset_) + " (a truncated tar)");
    }
    auto h = tf::parse_header(block.data());
    if (!h) {
      return damaged(waiting_.name.value_or(tf::readable_name(block.data(), tf::block_size)),
                     h.error().message() + " in the member header at offset " + at(offset_) +
                         ": the rest of this tar, " + std::to_string(end_ - offset_) +
                         " bytes, cannot be read");
    }
    return take(*h);
  }

  expected<bool> take(const tf::header& h) {
    const auto data_at = offset_ + tf::block_size;
    switch (h.type) {
      case tf::member_type::gnu_long_name:
      case tf::member_type::pax_header:
        return take_extension(h, data_at);
      case tf::member_type::regular:
        return take_regular(h, data_at);
      case tf::member_type::no_data:
        return skip(data_at, 0, h.name);
      case tf::member_type::other:
        return skip(data_at, h.size, h.name);
    }
    return false;
  }

  expected<bool> take_extension(const tf::header& h, std::uint64_t data_at) {
    const char* what = h.type == tf::member_type::pax_header ? "pax header" : "GNU long name";
    if (h.size > tf::max_extension_size || !fits(data_at, h.size)) {
      return damaged(waiting_.name.value_or(""), std::string(what) + " at offset " + at(offset_) +
                                                     " of " + std::to_string(h.size) +
                                                     " bytes is too long or runs past the end");
    }
    std::vector<std::uint8_t> data(h.size);
    if (auto ok = source_.read_at(data_at, data.data(), data.size()); !ok) {
      return std::move(ok).error();
    }
    if (!waiting_.first_header) {
      waiting_.first_header = offset_;
    }
    if (h.type == tf::member_type::gnu_long_name) {
      waiting_.name = tf::long_name(data.data(), data.size());
    } else if (auto ok = apply_pax(data); !ok) {
      return damaged(waiting_.name.value_or(""),
                     std::string(what) + " at offset " + at(offset_) + ": " + ok.error().message());
    }
    offset_ = data_at + tf::padded_size(h.size);
    return true;
  }

  expected<void> apply_pax(const std::vector<std::uint8_t>& data) {
    auto fields = tf::parse_pax(data.data(), data.size());
    if (!fields) {
      return std::move(fields).error();
    }
    if (fields->path) {
      waiting_.name = fields->path;
    }
    if (fields->size) {
      waiting_.size = fields->size;
    }
    return {};
  }

  expected<bool> take_regular(const tf::header& h, std::uint64_t data_at) {
    tar_member m{waiting_.name.value_or(h.name), waiting_.first_header.value_or(offset_), data_at,
                 waiting_.size.value_or(h.size)};
    waiting_ = {};
    if (!fits(data_at, m.size)) {
      return damaged(m.name, past_the_end(m.name, m.header_offset, m.size));
    }
    offset_ = data_at + tf::padded_size(m.size);
    listing_.members.push_back(std::move(m));
    return true;
  }

  expected<bool> skip(std::uint64_t data_at, std::uint64_t size, const std::string& name) {
    waiting_ = {};
    ++listing_.skipped_members;
    if (!fits(data_at, size)) {
      return damaged(name, past_the_end(name, offset_, size));
    }
    offset_ = data_at + tf::padded_size(size);
    return true;
  }

  // The archive ended; a long name or pax header without its member is damage.
  bool stop_if_pending() {
    if (waiting_.first_header) {
      auto first = *waiting_.first_header;
      damage(waiting_.name.value_or(""), first,
             "the tar ends after the extended header at offset " + at(first) +
                 ", before the member it describes (a truncated tar)");
    }
    return false;
  }

  bool damaged(std::string name, std::string reason) {
    damage(std::move(name), offset_, std::move(reason));
    return false;
  }

  void damage(std::string name, std::uint64_t offset, std::string reason) {
    listing_.damage = tar_damage{offset, std::move(name), std::move(reason)};
  }

  bool fits(std::uint64_t data_at, std::uint64_t size) const {
    return data_at <= end_ && size <= end_ - data_at;
  }

  std::string past_the_end(const std::string& name, std::uint64_t header,
                           std::uint64_t size) const {
    return "member \"" + name + "\" at offset " + at(header) + " holds " + std::to_string(size) +
           " bytes, which run past the end of the file (" + std::to_string(end_) +
           " bytes): a truncated tar";
  }

  static std::string at(std::uint64_t offset) { return std::to_string(offset); }

  const byte_source& source_;
  const std::uint64_t end_;
  std::uint64_t offset_ = 0;
  pending waiting_;
  tar_listing listing_;
};

}  // namespace

expected<tar_listing> list_tar(const byte_source& source) {
  return tar_walk(source).run();
}

}  // namespace conveyor

#pragma once
/// The members of one tar file, found by walking its headers from the start (a tar has no
/// index): each header is read, its data seeked over. GNU long names and pax path=/size= are
/// applied to the member they precede; directories, links and other non-regular members are
/// counted and skipped.
///
/// Damage ends the walk and is reported, not thrown: a header that fails its checksum (the
/// members after it cannot be found: a header's size is the only way to the next one), a
/// header cut short by the end of the file, or a member whose data runs past the end (a
/// truncated tar: the members before it are whole).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

/// A regular file in a tar; its data lies wholly within the file.
struct tar_member {
  std::string name;                 ///< its path, as the tar gives it (long names applied)
  std::uint64_t header_offset = 0;  ///< of its first header (a pax or long-name one, if any)
  std::uint64_t data_offset = 0;
  std::uint64_t size = 0;
};

/// What ended a walk before the end of the archive.
struct tar_damage {
  std::uint64_t offset = 0;  ///< the header where it is
  std::string name;          ///< the member's name as far as it can be read; may be empty
  std::string reason;        ///< a sentence naming the offset and what is wrong
};

struct tar_listing {
  std::vector<tar_member> members;    ///< regular files, in tar order
  std::optional<tar_damage> damage;   ///< set when the walk stopped early
  std::uint64_t skipped_members = 0;  ///< directories, links, devices, global headers, ...
};

/// Walks the tar in `source`. Errors: only a failed read (io_error, naming the file); damaged
/// contents are in the listing.
expected<tar_listing> list_tar(const byte_source& source);

}  // namespace conveyor

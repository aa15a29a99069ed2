#pragma once
/// The parts of the tar format the WebDataset reader needs, as Python's tarfile (and GNU tar)
/// write them: 512-byte headers (ustar, GNU and v7), octal or base-256 numbers, GNU long names
/// (type 'L') and pax extended headers (type 'x', with path= and size=). Pure functions over
/// bytes: they never read past what they are given.
///
///   header (512 B)  name[100] mode[8] uid[8] gid[8] size[12] mtime[12] chksum[8] typeflag[1]
///                   linkname[100] magic[6] version[2] uname[32] gname[32] devmajor[8]
///                   devminor[8] prefix[155] (ustar; GNU keeps other fields there) pad[12]
///   data            `size` bytes, padded with zeros to a multiple of 512
///   end of archive  a block of zeros (two are written; the first one ends the archive)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "conveyor/error.hpp"

namespace conveyor::tar_format {

inline constexpr std::size_t block_size = 512;
/// Longest GNU long name or pax header this reader takes (tar writers make them far shorter).
inline constexpr std::uint64_t max_extension_size = 1 << 20;

/// What a header's type flag makes of the member.
enum class member_type : std::uint8_t {
  regular,        ///< '0', '\0' or '7' (contiguous): a file, its data follows
  gnu_long_name,  ///< 'L': the data is the next member's name
  pax_header,     ///< 'x': the data holds pax records for the next member
  no_data,        ///< '1'..'6': hard link, symlink, devices, directory, fifo: no data follows
  other,          ///< anything else (pax global 'g', GNU 'K', sparse 'S', ...): data skipped
};

struct header {
  std::string name;  ///< prefix "/" name for ustar, else name: up to its first NUL
  std::uint64_t size = 0;
  member_type type = member_type::regular;
  char typeflag = '0';
};

/// The bytes of `size` rounded up to whole blocks.
std::uint64_t padded_size(std::uint64_t size) noexcept;

/// Whether the block is all zeros (the end of the archive).
bool is_zero_block(const std::uint8_t* block) noexcept;

/// Parses one header block: its checksum (the unsigned or the signed sum, as tarfile accepts),
/// then its size, name and type. Errors (corrupt_shard) say what is wrong, without a place:
/// the caller names the file and offset.
expected<header> parse_header(const std::uint8_t* block);

/// The name field as far as it is printable ASCII, for messages about a header that failed
/// its checksum ("" when nothing printable is there).
std::string readable_name(const std::uint8_t* block, std::size_t available);

/// What a pax extended header sets for the next member (the keys this reader uses).
struct pax_fields {
  std::optional<std::string> path;
  std::optional<std::uint64_t> size;
};

/// Parses pax records ("<length> <key>=<value>\n" ...). Errors (corrupt_shard) say which
/// record is malformed, without a place.
expected<pax_fields> parse_pax(const std::uint8_t* data, std::size_t size);

/// A GNU long name: the data up to its first NUL.
std::string long_name(const std::uint8_t* data, std::size_t size);

}  // namespace conveyor::tar_format

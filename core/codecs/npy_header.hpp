#pragma once
/// The header of a NumPy .npy file (numpy/lib/format.py, format versions 1.0, 2.0 and 3.0):
///
///   "\x93NUMPY" | u8 major | u8 minor | header length (u16 LE in 1.0, u32 LE in 2.0 and 3.0)
///   | the header: a Python dict literal {'descr': '<f4', 'fortran_order': False,
///     'shape': (2, 3), } padded with spaces and ended by '\n' | the elements
///
/// Parsing the header alone is the fast path for large arrays (3D volumes of a GB): a caller
/// reads or maps the first bytes of a file, learns the element type, the shape, the order and
/// where the elements start, and then reads or maps only what it needs (a sub-box).
/// npy_decoder.hpp turns the elements into a host_array.

#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"

namespace conveyor {

/// What a .npy header says, checked: an element type Conveyor holds, rank 0 to
/// host_array::max_rank, and extents whose every product (zero extents left out, times the
/// item size) fits in 63 bits: any box or slab of the array has a byte count that does too.
struct npy_header {
  /// The element type the array decodes to. '|b1' (bool) decodes to uint8 0 or 1.
  dtype type = dtype::uint8;
  bool is_bool = false;
  /// The elements are stored most significant byte first ('>'): decoding swaps them.
  bool big_endian = false;
  /// The elements are stored column-major: decoding reorders them into C order.
  bool fortran_order = false;
  int rank = 0;
  host_array::shape_type shape{};  ///< the first `rank` extents; the rest 0
  /// Bytes from the start of the file to the first element (the whole header).
  std::uint64_t data_offset = 0;
  /// Bytes of the elements: element count x item size.
  std::uint64_t data_bytes = 0;

  std::size_t item_size() const noexcept { return size_of(type); }
  /// "1x512x512 float32 big-endian Fortran-order": how messages name what a header says.
  std::string describe() const;
};

/// The descr NumPy writes for `type` on a little-endian machine: "|u1", "<i2", "<f4", ...
/// (bfloat16, which NumPy has no descr for: "<u2", its bits). Pure.
std::string npy_descr(dtype type);

/// The preamble (magic, version, header length): enough bytes to call npy_header_size.
inline constexpr std::size_t npy_preamble_bytes = 12;
/// Headers longer than this are refused: NumPy writes ~128 bytes for the dtypes Conveyor
/// holds, and a longer one is damaged or hostile.
inline constexpr std::uint64_t max_npy_header_bytes = 64 * 1024;

/// The bytes from the start of the file to its first element (npy_header::data_offset), read
/// from the preamble: the first min(size, npy_preamble_bytes) bytes of the file are enough.
/// errc::decode_error names what is wrong: no magic, a version NumPy does not write (1.0, 2.0
/// and 3.0 are read), a header longer than max_npy_header_bytes, too few bytes. Pure.
expected<std::uint64_t> npy_header_size(const std::uint8_t* head, std::size_t head_size);

/// Parses the header of a .npy file of `file_size` bytes whose first `head_size` bytes are at
/// `head` (at least npy_header_size bytes: the whole file, or its mapped or read prefix).
/// The dict is parsed strictly: exactly the keys 'descr', 'fortran_order' and 'shape', string
/// literals without escapes, True or False, a tuple of non-negative decimal integers; only
/// spaces and newlines after it. descr is one of '|u1' '<u1' '>u1' '|b1' and '<' or '>' with
/// 'i2' 'i4' 'i8' 'f2' 'f4'. The element count times the item size (checked for overflow)
/// must equal the bytes after the header (file_size - data_offset) exactly.
/// errc::decode_error names what is wrong ("descr '<f8' is not a dtype Conveyor holds",
/// "header says 1x512x512x512 float32 (536870912 bytes) but 1000 bytes follow"); the caller
/// adds which file or part it was. Reads no byte outside [head, head + head_size). Pure.
expected<npy_header> parse_npy_header(const std::uint8_t* head, std::size_t head_size,
                                      std::uint64_t file_size);

}  // namespace conveyor

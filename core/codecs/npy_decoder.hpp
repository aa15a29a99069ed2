#pragma once
/// NumPy .npy arrays as host_arrays: the elements in C order and the host's byte order,
/// whatever order and byte order the file stores them in. The header is parsed and checked by
/// npy_header.hpp; a header that lies about its size is an error, never an out-of-bounds read.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/host_array.hpp"
#include "core/codecs/npy_header.hpp"

namespace conveyor {

/// The array a whole .npy file holds: parse_npy_header, then npy_elements. The result has
/// the header's rank (0 to 4), shape and dtype ('|b1' gives uint8 0 or 1; big-endian elements
/// are swapped, Fortran-order ones reordered into C order). errc::decode_error names what is
/// wrong with the file; the caller adds which part it was. Thread-safe (pure).
expected<host_array> decode_npy(const std::uint8_t* data, std::size_t size);
inline expected<host_array> decode_npy(const std::vector<std::uint8_t>& bytes) {
  return decode_npy(bytes.data(), bytes.size());
}

/// The array that `header` describes, from its `size` element bytes at `elements` (the bytes
/// at header.data_offset of the file: read, or mapped for a large volume). `size` must be
/// header.data_bytes; errc::invalid_argument otherwise. Thread-safe (pure).
expected<host_array> npy_elements(const npy_header& header, const std::uint8_t* elements,
                                  std::size_t size);

}  // namespace conveyor

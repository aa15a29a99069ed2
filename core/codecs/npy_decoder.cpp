#include "core/codecs/npy_decoder.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace conveyor {
namespace {

constexpr bool host_is_big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

/// One size per axis: extents, or strides in elements.
using axis_sizes = std::array<std::size_t, host_array::max_rank>;

template <class Word>
Word load_word(const std::uint8_t* p) noexcept {
  Word w;
  std::memcpy(&w, p, sizeof w);  // the elements of a mapped file need not be aligned
  return w;
}

inline std::uint8_t byte_swapped(std::uint8_t w) noexcept {
  return w;
}
inline std::uint16_t byte_swapped(std::uint16_t w) noexcept {
  return __builtin_bswap16(w);
}
inline std::uint32_t byte_swapped(std::uint32_t w) noexcept {
  return __builtin_bswap32(w);
}
inline std::uint64_t byte_swapped(std::uint64_t w) noexcept {
  return __builtin_bswap64(w);
}

/// One 2-D slice of the reordering, in tiles so that both the strided reads and the
/// contiguous writes stay in cache: out[i * out_row + j] = in[i + j * in_column] for i < rows,
/// j < columns (element indices from the slice's bases).
template <class Word>
void transpose_slice(const std::uint8_t* in, std::size_t in_column, Word* out, std::size_t out_row,
                     std::size_t rows, std::size_t columns) {
  constexpr std::size_t tile = 32;
  for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
    for (std::size_t j0 = 0; j0 < columns; j0 += tile) {
      const std::size_t i_end = std::min(i0 + tile, rows);
      const std::size_t j_end = std::min(j0 + tile, columns);
      for (std::size_t j = j0; j < j_end; ++j) {
        for (std::size_t i = i0; i < i_end; ++i) {
          out[i * out_row + j] = load_word<Word>(in + (i + j * in_column) * sizeof(Word));
        }
      }
    }
  }
}

/// The `count` column-major elements at `in` into row-major order at `out`. Axis 0 is
/// contiguous in the input and the last axis in the output: each combination of the middle
/// axes is one 2-D transpose.
template <class Word>
void fortran_to_c(const npy_header& header, const std::uint8_t* in, Word* out, std::size_t count) {
  // Axes of extent 1 move no element (a 1 x D x H x W volume is a D x H x W one): leaving
  // them out keeps the transposes' strides short.
  axis_sizes extent{};
  std::size_t rank = 0;
  for (int k = 0; k < header.rank; ++k) {
    if (header.shape[static_cast<std::size_t>(k)] != 1) {
      extent[rank++] = static_cast<std::size_t>(header.shape[static_cast<std::size_t>(k)]);
    }
  }
  if (rank < 2) {
    std::memcpy(out, in, count * sizeof(Word));
    return;
  }
  axis_sizes in_stride{};
  axis_sizes out_stride{};
  for (std::size_t k = 0; k < rank; ++k) {
    in_stride[k] = k == 0 ? 1 : in_stride[k - 1] * extent[k - 1];
  }
  for (std::size_t k = rank; k-- > 0;) {
    out_stride[k] = k + 1 == rank ? 1 : out_stride[k + 1] * extent[k + 1];
  }
  std::size_t slices = 1;
  for (std::size_t k = 1; k + 1 < rank; ++k) {
    slices *= extent[k];
  }
  for (std::size_t slice = 0; slice < slices; ++slice) {
    std::size_t in_base = 0;
    std::size_t out_base = 0;
    for (std::size_t k = rank - 1, rest = slice; k-- > 1;) {
      const std::size_t index = rest % extent[k];
      rest /= extent[k];
      in_base += index * in_stride[k];
      out_base += index * out_stride[k];
    }
    transpose_slice(in + in_base * sizeof(Word), in_stride[rank - 1], out + out_base, out_stride[0],
                    extent[0], extent[rank - 1]);
  }
}

/// The elements into `out` in C order and the host's byte order.
template <class Word>
void copy_elements(const npy_header& header, const std::uint8_t* in, host_array& out) {
  auto* words = reinterpret_cast<Word*>(out.bytes.data());
  if (out.bytes.empty()) {
    return;
  }
  if (header.fortran_order) {
    fortran_to_c(header, in, words, out.element_count());
  } else {
    std::memcpy(words, in, out.bytes.size());
  }
  if (sizeof(Word) > 1 && header.big_endian != host_is_big_endian) {
    const std::size_t count = out.element_count();
    for (std::size_t i = 0; i < count; ++i) {
      words[i] = byte_swapped(words[i]);
    }
  }
}

}  // namespace

expected<host_array> npy_elements(const npy_header& header, const std::uint8_t* elements,
                                  std::size_t size) {
  if (size != header.data_bytes) {
    return error(errc::invalid_argument, "npy: " + header.describe() + " needs " +
                                             std::to_string(header.data_bytes) +
                                             " element bytes, not " + std::to_string(size));
  }
  auto out = host_array::uninitialized(header.type, header.shape.begin(),
                                       header.shape.begin() + header.rank);
  switch (header.item_size()) {
    case 1:
      copy_elements<std::uint8_t>(header, elements, out);
      break;
    case 2:
      copy_elements<std::uint16_t>(header, elements, out);
      break;
    case 4:
      copy_elements<std::uint32_t>(header, elements, out);
      break;
    default:
      copy_elements<std::uint64_t>(header, elements, out);
      break;
  }
  if (header.is_bool) {
    // NumPy writes bools as 0 and 1; anything else reads as true, as NumPy's view does.
    for (auto& b : out.bytes) {
      b = b != 0 ? 1 : 0;
    }
  }
  return out;
}

expected<host_array> decode_npy(const std::uint8_t* data, std::size_t size) {
  auto header = parse_npy_header(data, size, size);
  if (!header) {
    return header.error();
  }
  return npy_elements(*header, data + header->data_offset, size - header->data_offset);
}

}  // namespace conveyor

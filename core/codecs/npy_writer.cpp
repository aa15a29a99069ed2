#include "core/codecs/npy_writer.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "core/codecs/npy_header.hpp"

namespace conveyor {
namespace {

/// "(1, 128, 130, 140)", "(5,)", "()" as Python writes a shape tuple.
std::string shape_tuple(const host_array& a) {
  std::string out = "(";
  for (int i = 0; i < a.rank; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(a.extent(i));
  }
  return out + (a.rank == 1 ? ",)" : ")");
}

/// The preamble and the dict, padded with spaces and ended by '\n' so that the elements start
/// at a multiple of 64 bytes, after room for the first extent to grow to 21 digits, as NumPy
/// 1.24 writes it (numpy/lib/format.py, _write_array_header and _wrap_header).
std::string header_of(const host_array& a) {
  std::string dict = "{'descr': '" + npy_descr(a.type) +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(a) + ", }";
  constexpr std::size_t growth_axis_max_digits = 21;
  if (a.rank > 0) {
    dict.append(growth_axis_max_digits - std::to_string(a.extent(0)).size(), ' ');
  }
  const std::size_t preamble = 10;  // magic (6), version (2), u16 length (2)
  const std::size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

}  // namespace

expected<void> write_npy(const std::filesystem::path& path, const host_array& a) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const auto header = header_of(a);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(a.bytes.data()),
            static_cast<std::streamsize>(a.bytes.size()));
  out.close();
  if (!out) {
    return error{errc::io_error, path.string() + ": cannot write: " + std::strerror(errno)};
  }
  return {};
}

}  // namespace conveyor

#include "core/transforms/volume_part.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace conveyor {
namespace {

error volume_error(const std::string& name, const std::string& what) {
  return error{errc::decode_error, "part '" + name + "': " + what};
}

}  // namespace

expected<volume_part> open_volume_part(std::string name, std::shared_ptr<const byte_source> bytes,
                                       dtype type) {
  std::array<std::uint8_t, npy_preamble_bytes> preamble{};
  const auto file_size = bytes->size();
  const auto head = std::min<std::uint64_t>(file_size, preamble.size());
  if (auto ok = bytes->read_at(0, preamble.data(), static_cast<std::size_t>(head)); !ok) {
    return std::move(ok).error();
  }
  auto header_size = npy_header_size(preamble.data(), static_cast<std::size_t>(head));
  if (!header_size) {
    return volume_error(name, header_size.error().message());
  }
  if (*header_size > file_size) {
    return volume_error(name, "its header needs " + std::to_string(*header_size) +
                                  " bytes, the file has " + std::to_string(file_size));
  }
  std::vector<std::uint8_t> header_bytes(static_cast<std::size_t>(*header_size));
  if (auto ok = bytes->read_at(0, header_bytes.data(), header_bytes.size()); !ok) {
    return std::move(ok).error();
  }
  auto header = parse_npy_header(header_bytes.data(), header_bytes.size(), file_size);
  if (!header) {
    return volume_error(name, header.error().message());
  }
  if (header->rank != 4 || header->fortran_order || header->big_endian || header->is_bool ||
      header->type != type) {
    return volume_error(name, "holds " + header->describe() + "; a volume is read as " +
                                  std::string(name_of(type)) +
                                  " [channels, x, y, z], C order, little-endian");
  }
  if (header->data_bytes == 0) {
    return volume_error(
        name, "holds " + header->describe() + ", an empty volume: the volume steps need voxels");
  }
  return volume_part{std::move(name), *header, std::move(bytes)};
}

expected<void> read_box(const volume_part& volume, const volume_box& box, std::uint8_t* out) {
  const auto [X, Y, Z] = volume.extents();
  const auto item = static_cast<std::int64_t>(volume.header.item_size());
  const auto rows = box[1].extent();
  const auto row_bytes = box[2].extent() * item;
  // One read per (channel, x): the box's rows at full width, then its columns copied out. The
  // block is made for the first read (none for an empty box).
  std::vector<std::uint8_t> block;
  for (std::int64_t c = 0; c < volume.channels(); ++c) {
    for (std::int64_t x = box[0].start; x < box[0].stop; ++x) {
      block.resize(static_cast<std::size_t>(rows * Z * item));
      const auto first = ((c * X + x) * Y + box[1].start) * Z * item;
      if (auto ok =
              volume.bytes->read_at(volume.header.data_offset + first, block.data(), block.size());
          !ok) {
        return ok;
      }
      for (std::int64_t y = 0; y < rows; ++y) {
        std::memcpy(out, block.data() + (y * Z + box[2].start) * item,
                    static_cast<std::size_t>(row_bytes));
        out += row_bytes;
      }
    }
  }
  return {};
}

expected<void> for_each_slab(
    const volume_part& volume,
    const std::function<expected<void>(std::int64_t x, const std::uint8_t* slab)>& visit) {
  const auto [X, Y, Z] = volume.extents();
  const auto slab_bytes = Y * Z * static_cast<std::int64_t>(volume.header.item_size());
  std::vector<std::uint8_t> slab;  // made for the first slab (none for an empty volume)
  for (std::int64_t x = 0; x < volume.channels() * X; ++x) {
    slab.resize(static_cast<std::size_t>(slab_bytes));
    if (auto ok = volume.bytes->read_at(volume.header.data_offset + x * slab_bytes, slab.data(),
                                        slab.size());
        !ok) {
      return ok;
    }
    if (auto ok = visit(x, slab.data()); !ok) {
      return ok;
    }
  }
  return {};
}

}  // namespace conveyor

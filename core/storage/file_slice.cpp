#include "core/storage/file_slice.hpp"

#include <array>
#include <cstring>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

constexpr std::array<std::uint8_t, 8> magic{0, 'C', 'V', 'S', 'L', 'I', 'C', 'E'};
constexpr std::size_t fixed_bytes = magic.size() + 6 * 8 + 2;

}  // namespace

std::vector<std::uint8_t> encode_file_slice(const file_slice& slice) {
  std::vector<std::uint8_t> out(fixed_bytes + slice.path.size());
  std::memcpy(out.data(), magic.data(), magic.size());
  auto* at = out.data() + magic.size();
  for (std::uint64_t v : {slice.offset, slice.size, slice.file.device, slice.file.inode,
                          slice.file.size, static_cast<std::uint64_t>(slice.file.mtime_ns)}) {
    little_endian::store(at, v);
    at += 8;
  }
  little_endian::store(at, static_cast<std::uint16_t>(slice.path.size()));
  std::memcpy(at + 2, slice.path.data(), slice.path.size());
  return out;
}

expected<file_slice> decode_file_slice(const std::uint8_t* data, std::size_t size) {
  if (size < fixed_bytes || std::memcmp(data, magic.data(), magic.size()) != 0) {
    return error{errc::corrupt_shard, "a file slice descriptor of " + std::to_string(size) +
                                          " bytes is too short or has no magic"};
  }
  const auto* at = data + magic.size();
  std::array<std::uint64_t, 6> v{};
  for (auto& x : v) {
    x = little_endian::load<std::uint64_t>(at);
    at += 8;
  }
  auto path_size = little_endian::load<std::uint16_t>(at);
  if (path_size == 0 || fixed_bytes + path_size != size) {
    return error{errc::corrupt_shard, "a file slice descriptor's path length (" +
                                          std::to_string(path_size) + ") does not match its " +
                                          std::to_string(size) + " bytes"};
  }
  file_slice out{std::string(reinterpret_cast<const char*>(at + 2), path_size), v[0], v[1],
                 file_identity{v[2], v[3], v[4], static_cast<std::int64_t>(v[5])}};
  if (out.offset > out.file.size || out.size > out.file.size - out.offset) {
    return error{errc::corrupt_shard, out.path + ": a slice of " + std::to_string(out.size) +
                                          " bytes at " + std::to_string(out.offset) +
                                          " lies outside its " + std::to_string(out.file.size) +
                                          " bytes"};
  }
  return out;
}

expected<std::shared_ptr<const byte_source>> open_file_slice(const file_slice& slice) {
  auto file = open_regular_file(slice.path);
  if (!file) {
    return std::move(file).error();
  }
  if (!(file->identity == slice.file)) {
    return error{errc::checksum_mismatch,
                 slice.path +
                     ": not the file the sample was read from (replaced or changed "
                     "since: device, inode, size or modification time differ)"};
  }
  return make_file_source(std::move(file->fd), slice.path, slice.offset, slice.size);
}

}  // namespace conveyor

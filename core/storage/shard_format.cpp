#include "core/storage/shard_format.hpp"

#include <algorithm>
#include <cstring>

// The state struct is only complete with static linking declarations; the ABI is the same.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "core/base/little_endian.hpp"

namespace conveyor::shard_format {
namespace {

namespace le = little_endian;

template <std::size_t N>
bool has_magic(const std::uint8_t* bytes, const std::array<char, N>& magic) {
  return std::memcmp(bytes, magic.data(), N) == 0;
}

template <std::size_t N>
void put_magic(std::uint8_t* out, const std::array<char, N>& magic) {
  std::memcpy(out, magic.data(), N);
}

// Offsets of the fields, as documented in shard_format.hpp.
constexpr std::size_t header_version_at = 8;
constexpr std::size_t header_flags_at = 12;
constexpr std::size_t header_checksum_at = 24;
constexpr std::size_t record_key_size_at = 4;
constexpr std::size_t record_label_at = 8;
constexpr std::size_t record_flags_at = 12;
constexpr std::size_t record_payload_size_at = 16;
constexpr std::size_t record_checksum_at = 24;
constexpr std::size_t trailer_checksum_at = 24;
constexpr std::size_t trailer_magic_at = 32;

}  // namespace

std::uint64_t checksum(const std::uint8_t* data, std::size_t size) {
  return XXH3_64bits(data, size);
}

file_header_bytes encode_file_header(std::uint32_t version) {
  file_header_bytes out{};
  put_magic(out.data(), file_magic);
  le::store<std::uint32_t>(out.data() + header_version_at, version);
  le::store<std::uint32_t>(out.data() + header_flags_at, 0);
  le::store<std::uint64_t>(out.data() + header_checksum_at,
                           checksum(out.data(), header_checksum_at));
  return out;
}

expected<std::uint32_t> decode_file_header(const std::uint8_t* bytes, const std::string& where) {
  if (!has_magic(bytes, file_magic)) {
    return error{errc::corrupt_shard, where + ": not a Conveyor shard (wrong magic)"};
  }
  auto v = le::load<std::uint32_t>(bytes + header_version_at);
  if (v < first_version || v > multipart_version) {
    return error{errc::corrupt_shard, where + ": unsupported shard version " + std::to_string(v) +
                                          " (this build reads versions " +
                                          std::to_string(first_version) + " to " +
                                          std::to_string(multipart_version) + ")"};
  }
  if (le::load<std::uint64_t>(bytes + header_checksum_at) != checksum(bytes, header_checksum_at)) {
    return error{errc::corrupt_shard, where + ": file header checksum mismatch"};
  }
  return v;
}

std::uint64_t record_checksum(const std::uint8_t* header, const std::uint8_t* key,
                              std::uint32_t key_size, const std::uint8_t* payload,
                              std::uint64_t payload_size) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, record_checksum_at);
  XXH3_64bits_update(&state, key, key_size);
  XXH3_64bits_update(&state, payload, static_cast<std::size_t>(payload_size));
  return XXH3_64bits_digest(&state);
}

record_header_bytes encode_record_header(std::uint32_t key_size, std::int32_t label,
                                         std::uint32_t flags, const std::uint8_t* key,
                                         const std::uint8_t* payload, std::uint64_t payload_size) {
  record_header_bytes out{};
  put_magic(out.data(), record_magic);
  le::store<std::uint32_t>(out.data() + record_key_size_at, key_size);
  le::store<std::int32_t>(out.data() + record_label_at, label);
  le::store<std::uint32_t>(out.data() + record_flags_at, flags);
  le::store<std::uint64_t>(out.data() + record_payload_size_at, payload_size);
  le::store<std::uint64_t>(out.data() + record_checksum_at,
                           record_checksum(out.data(), key, key_size, payload, payload_size));
  return out;
}

expected<record_header> decode_record_header(const std::uint8_t* bytes, std::uint32_t version,
                                             const std::string& where) {
  if (!has_magic(bytes, record_magic)) {
    return error{errc::corrupt_shard, where + ": bad record magic (torn or overwritten record)"};
  }
  record_header h;
  h.key_size = le::load<std::uint32_t>(bytes + record_key_size_at);
  h.label = le::load<std::int32_t>(bytes + record_label_at);
  // Version 1 wrote the field as reserved (0) and never read it: neither does this.
  h.flags = version >= multipart_version ? le::load<std::uint32_t>(bytes + record_flags_at) : 0;
  h.payload_size = le::load<std::uint64_t>(bytes + record_payload_size_at);
  h.checksum = le::load<std::uint64_t>(bytes + record_checksum_at);
  if (h.key_size > max_key_size) {
    return error{errc::corrupt_shard, where + ": key size " + std::to_string(h.key_size) +
                                          " exceeds the limit of " + std::to_string(max_key_size)};
  }
  if ((h.flags & ~known_record_flags) != 0) {
    return error{errc::corrupt_shard,
                 where + ": unknown record flags " + std::to_string(h.flags & ~known_record_flags)};
  }
  return h;
}

void encode_index_entry(const index_entry& entry, std::uint8_t* out) {
  le::store<std::uint64_t>(out, entry.offset);
  le::store<std::uint64_t>(out + 8, entry.size);
}

index_entry decode_index_entry(const std::uint8_t* bytes) {
  return {le::load<std::uint64_t>(bytes), le::load<std::uint64_t>(bytes + 8)};
}

trailer_bytes encode_trailer(const trailer& t) {
  trailer_bytes out{};
  le::store<std::uint64_t>(out.data(), t.index_offset);
  le::store<std::uint64_t>(out.data() + 8, t.record_count);
  le::store<std::uint64_t>(out.data() + 16, t.index_checksum);
  le::store<std::uint64_t>(out.data() + trailer_checksum_at,
                           checksum(out.data(), trailer_checksum_at));
  put_magic(out.data() + trailer_magic_at, trailer_magic);
  return out;
}

expected<trailer> decode_trailer(const std::uint8_t* bytes, const std::string& where) {
  if (!has_magic(bytes + trailer_magic_at, trailer_magic)) {
    return error{errc::corrupt_shard,
                 where + ": no valid trailer (the file is truncated or was not finished)"};
  }
  if (le::load<std::uint64_t>(bytes + trailer_checksum_at) !=
      checksum(bytes, trailer_checksum_at)) {
    return error{errc::corrupt_shard, where + ": trailer checksum mismatch"};
  }
  return trailer{le::load<std::uint64_t>(bytes), le::load<std::uint64_t>(bytes + 8),
                 le::load<std::uint64_t>(bytes + 16)};
}

}  // namespace conveyor::shard_format

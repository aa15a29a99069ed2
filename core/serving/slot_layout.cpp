#include "core/serving/slot_layout.hpp"

#include <algorithm>
#include <cstring>

namespace conveyor {
namespace {

constexpr std::size_t cache_line = 64;
constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// The fixed head of every slot.
struct slot_header {
  std::uint32_t samples;
  std::uint32_t keys_used;  ///< bytes of the key area in use
  std::uint64_t published_ns;
};
static_assert(sizeof(slot_header) <= cache_line);

template <class T>
void put(std::uint8_t* at, const std::vector<T>& values) {
  if (!values.empty()) {
    std::memcpy(at, values.data(), values.size() * sizeof(T));
  }
}

template <class T>
std::vector<T> take(const std::uint8_t* at, std::uint32_t n) {
  std::vector<T> out(n);
  if (n > 0) {
    std::memcpy(out.data(), at, n * sizeof(T));
  }
  return out;
}

// Writes the keys, each cut to what is left of the room; returns the bytes used.
std::uint32_t put_keys(std::uint8_t* at, std::uint32_t room, const std::vector<std::string>& keys) {
  std::uint32_t used = 0;
  for (const auto& key : keys) {
    std::uint16_t n = 0;
    if (room - used >= sizeof n) {
      n = static_cast<std::uint16_t>(
          std::min<std::size_t>({key.size(), room - used - sizeof n, 0xFFFF}));
      std::memcpy(at + used, &n, sizeof n);
      std::memcpy(at + used + sizeof n, key.data(), n);
      used += static_cast<std::uint32_t>(sizeof n + n);
    }
  }
  return used;
}

// Reads `samples` keys from `used` bytes; a key past the end reads as "".
std::vector<std::string> take_keys(const std::uint8_t* at, std::uint32_t used,
                                   std::uint32_t samples) {
  std::vector<std::string> keys(samples);
  std::uint32_t pos = 0;
  for (auto& key : keys) {
    std::uint16_t n = 0;
    if (used - pos < sizeof n) {
      break;
    }
    std::memcpy(&n, at + pos, sizeof n);
    pos += sizeof n;
    n = static_cast<std::uint16_t>(std::min<std::uint32_t>(n, used - pos));
    key.assign(reinterpret_cast<const char*>(at + pos), n);
    pos += n;
  }
  return keys;
}

}  // namespace

slot_layout slot_layout::make(std::uint64_t batch_size, const sample_geometry& sample,
                              std::uint32_t key_bytes) {
  slot_layout l;
  l.batch_size = batch_size;
  l.sample = sample;
  l.key_bytes = key_bytes;
  l.tensor_offset = cache_line;
  l.tensor_capacity = static_cast<std::size_t>(batch_size) * sample.bytes();
  l.labels_offset = round_up(l.tensor_offset + l.tensor_capacity, cache_line);
  l.ids_offset = round_up(l.labels_offset + batch_size * sizeof(std::int32_t), cache_line);
  l.keys_offset = round_up(l.ids_offset + batch_size * sizeof(std::uint64_t), cache_line);
  l.slot_bytes = round_up(l.keys_offset + key_bytes, page);
  return l;
}

std::uint32_t default_key_bytes(std::uint64_t batch_size) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(batch_size * 256, 1U << 24));
}

void write_slot(const slot_layout& layout, std::uint8_t* slot, const slot_contents& contents) {
  slot_header h{};
  h.samples = static_cast<std::uint32_t>(contents.labels.size());
  h.published_ns = contents.published_ns;
  put(slot + layout.labels_offset, contents.labels);
  put(slot + layout.ids_offset, contents.sample_ids);
  h.keys_used = put_keys(slot + layout.keys_offset, layout.key_bytes, contents.keys);
  std::memcpy(slot, &h, sizeof h);
}

expected<slot_contents> read_slot(const slot_layout& layout, const std::uint8_t* slot,
                                  std::uint32_t samples) {
  slot_header h{};
  std::memcpy(&h, slot, sizeof h);
  if (h.samples != samples || samples > layout.batch_size || h.keys_used > layout.key_bytes) {
    return error{errc::invalid_argument,
                 "batch slot: its header says " + std::to_string(h.samples) + " samples and " +
                     std::to_string(h.keys_used) + " key bytes, the node's message " +
                     std::to_string(samples) + " samples (batch size " +
                     std::to_string(layout.batch_size) + ", key room " +
                     std::to_string(layout.key_bytes) + ")"};
  }
  slot_contents out;
  out.labels = take<std::int32_t>(slot + layout.labels_offset, samples);
  out.sample_ids = take<std::uint64_t>(slot + layout.ids_offset, samples);
  out.keys = take_keys(slot + layout.keys_offset, h.keys_used, samples);
  out.published_ns = h.published_ns;
  return out;
}

}  // namespace conveyor

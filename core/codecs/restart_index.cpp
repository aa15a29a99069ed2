#include "core/codecs/restart_index.hpp"

#include <algorithm>
#include <cstring>

#include "core/base/little_endian.hpp"

namespace conveyor {
namespace {

constexpr char magic[] = "CONVEYOR-RST";  // with its NUL: 13 bytes
constexpr std::size_t magic_size = sizeof magic;
constexpr std::uint8_t index_version = 1;
constexpr std::size_t index_fixed = magic_size + 1 + 4;  // magic, version, rows
constexpr std::uint8_t app9 = 0xE9;
constexpr std::size_t max_segment = 65535 - 2;  // a segment's payload, after its length

int big_endian16(const std::uint8_t* p) noexcept {
  return (p[0] << 8) | p[1];
}

bool is_sof(std::uint8_t m) noexcept {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

/// The segments of a JPEG's header, SOI to SOS.
struct header_walk {
  std::size_t sof = 0;  ///< the frame header's marker (FF C0 / C1); 0: another frame type
  std::size_t sos = 0;  ///< the SOS marker
  std::size_t entropy_begin = 0;
  std::size_t index_at = 0;  ///< the index segment's payload (after its length); 0: none
  std::size_t index_size = 0;
  int restart_interval = 0;
};

/// Walks the segments from SOI to SOS; nullopt when they do not parse.
std::optional<header_walk> walk_header(const std::uint8_t* d, std::size_t n) {
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) {
    return std::nullopt;
  }
  header_walk w;
  bool other_frame = false;
  std::size_t p = 2;
  while (p + 4 <= n) {
    if (d[p] != 0xFF) {
      return std::nullopt;
    }
    const std::uint8_t m = d[p + 1];
    if (m == 0xFF) {  // a fill byte
      ++p;
      continue;
    }
    if (m == 0xD9 || m == 0xD8) {
      return std::nullopt;
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // no length
      p += 2;
      continue;
    }
    const auto length = static_cast<std::size_t>(big_endian16(d + p + 2));
    if (length < 2 || p + 2 + length > n) {
      return std::nullopt;
    }
    const std::uint8_t* payload = d + p + 4;
    const std::size_t payload_size = length - 2;
    if (m == 0xC0 || m == 0xC1) {
      w.sof = p;
    } else if (is_sof(m)) {
      other_frame = true;
    } else if (m == 0xDD && payload_size >= 2) {
      w.restart_interval = big_endian16(payload);
    } else if (m == app9 && payload_size >= index_fixed &&
               is_restart_index_segment(payload, payload_size)) {
      w.index_at = p + 4;
      w.index_size = payload_size;
    } else if (m == 0xDA) {
      w.sos = p;
      w.entropy_begin = p + 2 + length;
      if (other_frame) {
        w.sof = 0;
      }
      return w;
    }
    p += 2 + length;
  }
  return std::nullopt;
}

/// The frame's geometry in MCUs, for a single interleaved scan of every component.
struct mcu_grid {
  int height = 0;  ///< image height, pixels
  int mcu_height = 0;
  std::uint32_t rows = 0;
  std::uint32_t per_row = 0;
};

std::optional<mcu_grid> grid_of(const std::uint8_t* d, std::size_t n, const header_walk& w) {
  if (w.sof == 0 || w.sos == 0) {
    return std::nullopt;
  }
  const std::uint8_t* f = d + w.sof + 4;  // P, Y, X, Nf, then 3 bytes per component
  const std::size_t sof_payload = static_cast<std::size_t>(big_endian16(d + w.sof + 2)) - 2;
  const std::size_t sos_payload = static_cast<std::size_t>(big_endian16(d + w.sos + 2)) - 2;
  if (sof_payload < 6 || sos_payload < 1 || w.entropy_begin > n) {
    return std::nullopt;
  }
  const int components = f[5];
  if (components < 1 || sof_payload < 6 + 3 * static_cast<std::size_t>(components) ||
      d[w.sos + 4] != components) {
    return std::nullopt;  // several scans: a row's data is not in one place
  }
  int max_h = 1;
  int max_v = 1;
  for (int c = 0; c < components; ++c) {
    const std::uint8_t factors = f[6 + 3 * c + 1];
    max_h = std::max(max_h, factors >> 4);
    max_v = std::max(max_v, factors & 0x0F);
  }
  if (components == 1) {  // a single-component scan's MCU is one block
    max_h = 1;
    max_v = 1;
  }
  mcu_grid g;
  g.height = big_endian16(f + 1);
  const int width = big_endian16(f + 3);
  g.mcu_height = 8 * max_v;
  const int mcu_width = 8 * max_h;
  if (g.height <= 0 || width <= 0) {
    return std::nullopt;
  }
  g.rows = static_cast<std::uint32_t>((g.height + g.mcu_height - 1) / g.mcu_height);
  g.per_row = static_cast<std::uint32_t>((width + mcu_width - 1) / mcu_width);
  return g;
}

/// The restart markers' positions in the entropy data: where each MCU row's data begins.
std::vector<std::uint32_t> row_starts(const std::uint8_t* d, std::size_t n, std::size_t begin) {
  std::vector<std::uint32_t> starts{0};
  std::size_t p = begin;
  while (p + 1 < n) {
    if (d[p] != 0xFF) {
      ++p;
      continue;
    }
    const std::uint8_t m = d[p + 1];
    if (m == 0x00) {  // a stuffed FF
      p += 2;
    } else if (m == 0xFF) {
      ++p;
    } else if (m >= 0xD0 && m <= 0xD7) {
      starts.push_back(static_cast<std::uint32_t>(p + 2 - begin));
      p += 2;
    } else {
      break;  // EOI, or the next scan
    }
  }
  return starts;
}

void append_le32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  std::uint8_t bytes[4];
  little_endian::store(bytes, value);
  out.insert(out.end(), bytes, bytes + 4);
}

}  // namespace

std::uint32_t restart_index::offset(std::uint32_t row) const noexcept {
  return little_endian::load<std::uint32_t>(offsets + 4 * static_cast<std::size_t>(row));
}

std::optional<restart_index> find_restart_index(const std::uint8_t* data, std::size_t size) {
  auto w = walk_header(data, size);
  if (!w || w->index_at == 0) {
    return std::nullopt;
  }
  auto grid = grid_of(data, size, *w);
  const std::uint8_t* segment = data + w->index_at;
  if (!grid || w->restart_interval != static_cast<int>(grid->per_row) ||
      segment[magic_size] != index_version) {
    return std::nullopt;
  }
  restart_index index;
  index.rows = little_endian::load<std::uint32_t>(segment + magic_size + 1);
  if (index.rows != grid->rows || w->index_size != index_fixed + 4 * std::size_t{index.rows}) {
    return std::nullopt;
  }
  index.entropy_begin = w->entropy_begin;
  index.height_at = w->sof + 5;
  index.image_height = grid->height;
  index.mcu_height = grid->mcu_height;
  index.offsets = segment + index_fixed;
  const std::size_t entropy_size = size - w->entropy_begin;
  for (std::uint32_t r = 0; r < index.rows; ++r) {
    const std::uint32_t o = index.offset(r);
    if ((r == 0 && o != 0) || (r > 0 && o <= index.offset(r - 1)) || o >= entropy_size) {
      return std::nullopt;
    }
  }
  return index;
}

bool is_restart_index_segment(const std::uint8_t* payload, std::size_t size) noexcept {
  return size >= magic_size && std::memcmp(payload, magic, magic_size) == 0;
}

std::size_t restart_index_segment_size(std::uint32_t rows) noexcept {
  return 4 + index_fixed + 4 * std::size_t{rows};
}

bool restart_marker_before(const std::uint8_t* data, std::size_t size, const restart_index& index,
                           std::uint32_t k) noexcept {
  if (k == 0 || k >= index.rows) {
    return false;
  }
  const std::size_t at = index.entropy_begin + index.offset(k);
  return at >= 2 && at <= size && data[at - 2] == 0xFF && data[at - 1] == 0xD0 + ((k - 1) & 7);
}

std::optional<std::vector<std::uint8_t>> with_restart_index(const std::vector<std::uint8_t>& jpeg) {
  const std::uint8_t* d = jpeg.data();
  auto w = walk_header(d, jpeg.size());
  if (!w || w->index_at != 0) {
    return std::nullopt;
  }
  auto grid = grid_of(d, jpeg.size(), *w);
  if (!grid || w->restart_interval != static_cast<int>(grid->per_row)) {
    return std::nullopt;
  }
  auto starts = row_starts(d, jpeg.size(), w->entropy_begin);
  const std::size_t payload = index_fixed + 4 * starts.size();
  if (starts.size() != grid->rows || payload > max_segment) {
    return std::nullopt;
  }
  std::vector<std::uint8_t> out;
  out.reserve(jpeg.size() + restart_index_segment_size(grid->rows));
  out.insert(out.end(), jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(w->sos));
  const std::uint8_t marker[4] = {0xFF, app9, static_cast<std::uint8_t>((payload + 2) >> 8),
                                  static_cast<std::uint8_t>((payload + 2) & 0xFF)};
  out.insert(out.end(), marker, marker + 4);
  out.insert(out.end(), magic, magic + magic_size);
  out.push_back(index_version);
  append_le32(out, static_cast<std::uint32_t>(starts.size()));
  for (std::uint32_t start : starts) {
    append_le32(out, start);
  }
  out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(w->sos), jpeg.end());
  return out;
}

}  // namespace conveyor

#include "core/codecs/png_decoder.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include <png.h>

namespace conveyor {
namespace {

constexpr bool host_is_big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

/// Where libpng's error callback leaves its message. Fixed-size and trivially destructible:
/// libpng leaves the callback by longjmp.
struct png_failure {
  char message[256] = {};
};

/// The PNG's bytes, read by libpng through read_from_memory.
struct memory_source {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t position = 0;
};

/// The image as it will be read, after the transformations.
struct png_layout {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  int bit_depth = 0;
  int channels = 0;
  std::size_t row_bytes = 0;
};

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  auto* failure = static_cast<png_failure*>(png_get_error_ptr(png));
  std::snprintf(failure->message, sizeof failure->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp /*png*/, png_const_charp /*message*/) {
  // Warnings are about ancillary chunks libpng skips; damage that matters is an error.
}

void read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<memory_source*>(png_get_io_ptr(png));
  if (length > source->size - source->position) {
    png_error(png, "file is truncated");
  }
  std::memcpy(out, source->data + source->position, length);
  source->position += length;
}

/// Owns libpng's read and info structures.
class png_reader {
 public:
  explicit png_reader(png_failure* failure)
      : png_(png_create_read_struct(PNG_LIBPNG_VER_STRING, failure, on_error, on_warning)),
        info_(png_ != nullptr ? png_create_info_struct(png_) : nullptr) {}
  ~png_reader() { png_destroy_read_struct(&png_, info_ != nullptr ? &info_ : nullptr, nullptr); }
  png_reader(const png_reader&) = delete;
  png_reader& operator=(const png_reader&) = delete;

  bool ok() const noexcept { return png_ != nullptr && info_ != nullptr; }
  png_structp png() const noexcept { return png_; }
  png_infop info() const noexcept { return info_; }

 private:
  png_structp png_;
  png_infop info_;
};

/// Asks libpng for 8 or 16 bits per sample, palettes expanded, and `channels`.
void request_transforms(png_structp png, png_infop info, png_channels channels) {
  const int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_set_palette_to_rgb(png);  // RGB, or RGBA where there is a tRNS chunk
  }
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (png_get_bit_depth(png, info) == 16 && !host_is_big_endian) {
    png_set_swap(png);
  }
  if (channels == png_channels::rgb) {
    if ((color & PNG_COLOR_MASK_COLOR) == 0) {
      png_set_gray_to_rgb(png);
    }
    png_set_strip_alpha(png);  // also what a palette's tRNS expands to
  }
  png_set_interlace_handling(png);
}

// The two functions below call setjmp: libpng returns to them by longjmp on an error, so they
// and every function they call hold only trivially destructible locals.

/// Reads the header and sets up the transformations; false on an error.
bool read_layout(png_structp png, png_infop info, png_channels channels, png_layout* layout) {
  if (setjmp(png_jmpbuf(png)) != 0) {
    return false;
  }
  png_read_info(png, info);
  request_transforms(png, info, channels);
  png_read_update_info(png, info);
  layout->width = png_get_image_width(png, info);
  layout->height = png_get_image_height(png, info);
  layout->bit_depth = png_get_bit_depth(png, info);
  layout->channels = png_get_channels(png, info);
  layout->row_bytes = png_get_rowbytes(png, info);
  return true;
}

/// Reads every row (every pass of an interlaced image) and the chunks up to IEND.
bool read_rows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)) != 0) {
    return false;
  }
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

error png_error_value(const std::string& why) {
  return error(errc::decode_error, "png: " + why);
}

/// The bytes of each decoded sample: 1 for 8 bits, 4 for 16 (widened to int32).
std::size_t decoded_sample_bytes(const png_layout& layout) {
  return layout.bit_depth == 16 ? sizeof(std::int32_t) : 1;
}

/// The layout's pixels checked against the limit, and against libpng's row size.
expected<void> check_layout(const png_layout& layout, const png_options& options) {
  const auto pixels = static_cast<std::int64_t>(layout.width) * layout.height;
  if (pixels > options.max_pixels) {
    return png_error_value(std::to_string(layout.width) + "x" + std::to_string(layout.height) +
                           " has more than " + std::to_string(options.max_pixels) + " pixels");
  }
  const std::size_t sample_bytes = layout.bit_depth == 16 ? 2 : 1;
  if ((layout.bit_depth != 8 && layout.bit_depth != 16) || layout.channels < 1 ||
      layout.channels > 4 ||
      layout.row_bytes != std::size_t{layout.width} * layout.channels * sample_bytes) {
    return png_error_value("libpng gives an unexpected layout (" +
                           std::to_string(layout.bit_depth) + " bits, " +
                           std::to_string(layout.channels) + " channels)");
  }
  return {};
}

/// Bytes of a decoded row (layout.row_bytes for 8 bits, twice that for 16).
std::size_t decoded_row_bytes(const png_layout& layout) {
  return std::size_t{layout.width} * static_cast<std::size_t>(layout.channels) *
         decoded_sample_bytes(layout);
}

/// The bytes the decode would hold, the array it gives and the row pointers, checked against
/// options.max_bytes (by division: no product overflows). Precondition: check_layout accepted
/// `layout`.
expected<void> check_bytes(const png_layout& layout, const png_options& options) {
  const std::size_t per_row = decoded_row_bytes(layout) + sizeof(png_bytep);
  if (layout.height > 0 && per_row > options.max_bytes / layout.height) {
    return png_error_value(std::to_string(layout.width) + "x" + std::to_string(layout.height) +
                           " of " + std::to_string(layout.channels) + " " +
                           std::to_string(layout.bit_depth) + "-bit channels decodes to more " +
                           "than " + std::to_string(options.max_bytes) + " bytes (" +
                           std::to_string(per_row) + " a row with its row pointer)");
  }
  return {};
}

/// Reads the rows into `first_row`, `stride` bytes apart.
expected<void> read_pixels(const png_reader& reader, const png_layout& layout,
                           std::uint8_t* first_row, std::size_t stride,
                           const png_failure& failure) {
  std::vector<png_bytep> rows(layout.height);
  for (std::size_t y = 0; y < rows.size(); ++y) {
    rows[y] = first_row + y * stride;
  }
  if (!read_rows(reader.png(), reader.info(), rows.data())) {
    return png_error_value(failure.message);
  }
  return {};
}

/// Widens the `samples` 16-bit samples that sit in the back half of each of `rows` rows of
/// `pixels` (4 x samples bytes a row) to int32 over the whole row. In place, front to back:
/// sample i's int32 ends at byte 4i + 4, never past byte 2 x samples + 2i + 2, where the first
/// 16-bit sample still to widen starts.
void widen_rows(std::uint8_t* pixels, std::size_t rows, std::size_t samples) {
  for (std::size_t y = 0; y < rows; ++y) {
    std::uint8_t* row = pixels + y * samples * sizeof(std::int32_t);
    const std::uint8_t* narrow = row + samples * sizeof(std::uint16_t);
    for (std::size_t i = 0; i < samples; ++i) {
      std::uint16_t value = 0;
      std::memcpy(&value, narrow + i * sizeof value, sizeof value);
      const std::int32_t wide = value;
      std::memcpy(row + i * sizeof wide, &wide, sizeof wide);
    }
  }
}

}  // namespace

expected<host_array> decode_png(const std::uint8_t* data, std::size_t size,
                                const png_options& options) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
    return png_error_value("not a PNG file (no PNG signature)");
  }
  png_failure failure;
  png_reader reader(&failure);
  if (!reader.ok()) {
    return png_error_value("libpng cannot allocate its read state");
  }
  memory_source source{data, size, 0};
  png_set_read_fn(reader.png(), &source, read_from_memory);
  png_layout layout;
  if (!read_layout(reader.png(), reader.info(), options.channels, &layout)) {
    return png_error_value(failure.message);
  }
  if (auto checked = check_layout(layout, options); !checked) {
    return checked.error();
  }
  if (auto checked = check_bytes(layout, options); !checked) {
    return checked.error();
  }
  const std::int64_t extents[] = {layout.height, layout.width, layout.channels};
  const dtype type = layout.bit_depth == 8 ? dtype::uint8 : dtype::int32;
  auto out = host_array::uninitialized(type, std::begin(extents), std::end(extents));
  // 16 bits: the samples in host order, each row read into the back half of its int32 row and
  // widened there (exactly 0..65535): no second buffer.
  const std::size_t stride = decoded_row_bytes(layout);
  std::uint8_t* first_row = out.bytes.data() + (stride - layout.row_bytes);
  if (auto read = read_pixels(reader, layout, first_row, stride, failure); !read) {
    return read.error();
  }
  if (layout.bit_depth == 16) {
    widen_rows(out.bytes.data(), layout.height, layout.row_bytes / sizeof(std::uint16_t));
  }
  return out;
}

bool is_png(const std::uint8_t* data, std::size_t size) noexcept {
  static constexpr std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return size >= sizeof signature && std::memcmp(data, signature, sizeof signature) == 0;
}

}  // namespace conveyor

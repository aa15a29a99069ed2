#include "core/codecs/jpeg_region.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/codecs/jpeg_two_part_source.hpp"
#include "core/codecs/libjpeg_session.hpp"
#include "core/codecs/restart_index.hpp"

namespace conveyor {
namespace {

struct session {
  jpeg_decompress_struct cinfo;
  libjpeg_errors errors;
};

enum class layout : std::uint8_t { fits, unsupported };

/// Where the decode reads: the JPEG as it is, or (a restart index's shortcut) its header with
/// the frame height patched, then its entropy data from MCU row `first_row` on.
struct input {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  const std::uint8_t* tail = nullptr;  ///< null: `data` is the whole JPEG
  std::size_t tail_size = 0;
  std::uint32_t first_row = 0;
};

// Reads the header and starts the decode at `options`' scale; false on an error.
bool start(session& s, const input& in, const decode_options& options, layout& how) {
  if (setjmp(s.errors.failed) != 0) {
    return false;
  }
  if (in.tail != nullptr) {
    jpeg_two_part_src(&s.cinfo, in.data, in.size, in.tail, in.tail_size,
                      static_cast<int>(in.first_row));
  } else {
    jpeg_mem_src(&s.cinfo, in.data, static_cast<unsigned long>(in.size));
  }
  jpeg_read_header(&s.cinfo, TRUE);
  if (s.cinfo.progressive_mode || s.cinfo.jpeg_color_space == JCS_CMYK ||
      s.cinfo.jpeg_color_space == JCS_YCCK ||
      std::int64_t{s.cinfo.image_width} * s.cinfo.image_height > max_image_pixels) {
    how = layout::unsupported;  // decode_image says what is wrong with a too large one
    return true;
  }
  s.cinfo.scale_num = static_cast<unsigned>(options.scale_num);
  s.cinfo.scale_denom = static_cast<unsigned>(options.scale_denom);
  s.cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&s.cinfo);
  how = layout::fits;
  return true;
}

// The columns [x0, x0 + width) of the scaled image, widened by libjpeg to whole iMCU columns:
// the first column decoded and how many.
struct columns {
  JDIMENSION first = 0;
  JDIMENSION count = 0;
};

bool crop_columns(session& s, columns& c) {
  if (setjmp(s.errors.failed) != 0) {
    return false;
  }
  jpeg_crop_scanline(&s.cinfo, &c.first, &c.count);
  return true;
}

// Skips `top` rows, then reads `rows` rows into `out` (one row every `stride` bytes).
bool read_rows(session& s, JDIMENSION top, int rows, std::uint8_t* out, std::size_t stride) {
  if (setjmp(s.errors.failed) != 0) {
    return false;
  }
  if (top > 0) {
    jpeg_skip_scanlines(&s.cinfo, top);
  }
  for (int r = 0; r < rows; ++r) {
    JSAMPROW row = out + static_cast<std::size_t>(r) * stride;
    if (jpeg_read_scanlines(&s.cinfo, &row, 1) != 1) {
      std::snprintf(s.errors.message, sizeof s.errors.message, "the image ends at row %u",
                    s.cinfo.output_scanline);
      return false;
    }
  }
  return true;
}

error failure(const session& s) {
  return error(errc::decode_error, std::string("JPEG: ") + s.errors.message);
}

/// The scaled rows of one MCU row at `options`' scale; 0 when not a whole number.
int scaled_rows_per_mcu_row(const restart_index& index, const decode_options& options) {
  const int rows = index.mcu_height * options.scale_num;
  return rows % options.scale_denom == 0 ? rows / options.scale_denom : 0;
}

/// With a restart index, starts the decode one MCU row above the one that holds `region`'s
/// first row (the chroma upsampler reads a row of context above; the row above is decoded and
/// skipped, as without the index): the header is copied into `head` with the height of what
/// is left, and `region` moves up by the rows left out. The JPEG as it is otherwise.
input shortcut(const std::uint8_t* data, std::size_t size, const decode_options& options,
               image_region& region, std::vector<std::uint8_t>& head) {
  input whole{data, size, nullptr, 0, 0};
  auto index = find_restart_index(data, size);
  if (!index) {
    return whole;
  }
  const int rows_per = scaled_rows_per_mcu_row(*index, options);
  if (rows_per == 0 || region.top / rows_per < 2) {
    return whole;
  }
  const auto k = static_cast<std::uint32_t>(region.top / rows_per - 1);
  if (!restart_marker_before(data, size, *index, k)) {
    return whole;
  }
  head.assign(data, data + index->entropy_begin);
  const int height = index->image_height - static_cast<int>(k) * index->mcu_height;
  head[index->height_at] = static_cast<std::uint8_t>(height >> 8);
  head[index->height_at + 1] = static_cast<std::uint8_t>(height & 0xFF);
  region.top -= static_cast<int>(k) * rows_per;
  const std::size_t from = index->entropy_begin + index->offset(k);
  return {head.data(), head.size(), data + from, size - from, k};
}

}  // namespace

expected<std::optional<cv::Mat>> decode_jpeg_region(const std::uint8_t* data, std::size_t size,
                                                    const decode_options& options,
                                                    image_region region) {
  session s{};
  s.errors.strict = options.strict;
  attach(s.errors, reinterpret_cast<j_common_ptr>(&s.cinfo));
  jpeg_create_decompress(&s.cinfo);
  struct destroy {
    jpeg_decompress_struct* cinfo;
    ~destroy() { jpeg_destroy_decompress(cinfo); }
  } cleanup{&s.cinfo};
  std::vector<std::uint8_t> head;
  const image_region asked = region;
  const input in = shortcut(data, size, options, region, head);
  layout how = layout::unsupported;
  if (!start(s, in, options, how)) {
    return failure(s);
  }
  if (how == layout::unsupported) {
    return std::optional<cv::Mat>();
  }
  const int out_width = static_cast<int>(s.cinfo.output_width);
  const int out_height = static_cast<int>(s.cinfo.output_height);
  if (region.left < 0 || region.top < 0 || region.width <= 0 || region.height <= 0 ||
      region.left + region.width > out_width || region.top + region.height > out_height) {
    const int image_height = out_height + (asked.top - region.top);
    return error(errc::invalid_argument,
                 "JPEG region " + std::to_string(asked.width) + "x" + std::to_string(asked.height) +
                     " at " + std::to_string(asked.left) + "," + std::to_string(asked.top) +
                     " is not inside the " + std::to_string(out_width) + "x" +
                     std::to_string(image_height) + " image");
  }
  // One column more on the left and two on the right: the chroma upsampler treats the edge of
  // a cropped region as the image's edge, and these keep that edge out of the region.
  const int left = std::max(0, region.left - 1);
  const int right = std::min(out_width, region.left + region.width + 2);
  columns c{static_cast<JDIMENSION>(left), static_cast<JDIMENSION>(right - left)};
  if (!crop_columns(s, c)) {
    return failure(s);
  }
  cv::Mat decoded(region.height, static_cast<int>(c.count), CV_8UC3);
  if (!read_rows(s, static_cast<JDIMENSION>(region.top), region.height, decoded.data,
                 decoded.step)) {
    return failure(s);
  }
  jpeg_abort_decompress(&s.cinfo);  // the rows below the region are never decoded
  return std::optional<cv::Mat>(
      decoded(cv::Rect(region.left - static_cast<int>(c.first), 0, region.width, region.height)));
}

}  // namespace conveyor

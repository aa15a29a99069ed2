#include "core/codecs/jpeg_region.hpp"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <string>

// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>

namespace conveyor {
namespace {

// libjpeg reports errors through a callback that must not return: it jumps back to the
// setjmp of the call in progress. Only trivially destructible objects live in the frames it
// jumps over (the functions below); the caller owns the pixels.
struct session {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr errors;
  std::jmp_buf failed;
  bool strict = true;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* s = reinterpret_cast<session*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, s->message);
  std::longjmp(s->failed, 1);
}

// Warnings (level -1: corrupt data, which libjpeg fills with grey) are errors when strict;
// trace messages (level >= 0) are dropped.
void on_message(j_common_ptr cinfo, int level) {
  auto* s = reinterpret_cast<session*>(cinfo->client_data);
  if (level < 0 && s->strict) {
    on_error(cinfo);
  }
}

enum class layout : std::uint8_t { fits, unsupported };

// Reads the header and starts the decode at `options`' scale; false on an error.
bool start(session& s, const std::uint8_t* data, std::size_t size, const decode_options& options,
           layout& how) {
  if (setjmp(s.failed) != 0) {
    return false;
  }
  jpeg_mem_src(&s.cinfo, data, static_cast<unsigned long>(size));
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
  if (setjmp(s.failed) != 0) {
    return false;
  }
  jpeg_crop_scanline(&s.cinfo, &c.first, &c.count);
  return true;
}

// Skips `top` rows, then reads `rows` rows into `out` (one row every `stride` bytes).
bool read_rows(session& s, JDIMENSION top, int rows, std::uint8_t* out, std::size_t stride) {
  if (setjmp(s.failed) != 0) {
    return false;
  }
  if (top > 0) {
    jpeg_skip_scanlines(&s.cinfo, top);
  }
  for (int r = 0; r < rows; ++r) {
    JSAMPROW row = out + static_cast<std::size_t>(r) * stride;
    if (jpeg_read_scanlines(&s.cinfo, &row, 1) != 1) {
      std::snprintf(s.message, sizeof s.message, "the image ends at row %u",
                    s.cinfo.output_scanline);
      return false;
    }
  }
  return true;
}

error failure(const session& s) {
  return error(errc::decode_error, std::string("JPEG: ") + s.message);
}

}  // namespace

expected<std::optional<cv::Mat>> decode_jpeg_region(const std::uint8_t* data, std::size_t size,
                                                    const decode_options& options,
                                                    image_region region) {
  session s{};
  s.strict = options.strict;
  s.cinfo.err = jpeg_std_error(&s.errors);
  s.errors.error_exit = on_error;
  s.errors.emit_message = on_message;
  s.cinfo.client_data = &s;
  jpeg_create_decompress(&s.cinfo);
  struct destroy {
    jpeg_decompress_struct* cinfo;
    ~destroy() { jpeg_destroy_decompress(cinfo); }
  } cleanup{&s.cinfo};
  layout how = layout::unsupported;
  if (!start(s, data, size, options, how)) {
    return failure(s);
  }
  if (how == layout::unsupported) {
    return std::optional<cv::Mat>();
  }
  const int out_width = static_cast<int>(s.cinfo.output_width);
  const int out_height = static_cast<int>(s.cinfo.output_height);
  if (region.left < 0 || region.top < 0 || region.width <= 0 || region.height <= 0 ||
      region.left + region.width > out_width || region.top + region.height > out_height) {
    return error(errc::invalid_argument,
                 "JPEG region " + std::to_string(region.width) + "x" +
                     std::to_string(region.height) + " at " + std::to_string(region.left) + "," +
                     std::to_string(region.top) + " is not inside the " +
                     std::to_string(out_width) + "x" + std::to_string(out_height) + " image");
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

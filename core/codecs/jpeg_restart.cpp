#include "core/codecs/jpeg_restart.hpp"

#include <cstdlib>
#include <cstring>

#include "core/codecs/libjpeg_session.hpp"
#include "core/codecs/restart_index.hpp"

namespace conveyor {
namespace {

constexpr unsigned max_marker_length = 0xFFFF;

/// A decompressor reading coefficients and a compressor writing them, sharing one error
/// handler: any error of either jumps back to the transcode's setjmp.
struct transcoder {
  jpeg_decompress_struct in;
  jpeg_compress_struct out;
  libjpeg_errors errors;
};

bool starts_with(const jpeg_saved_marker_ptr m, const char* prefix, std::size_t n) {
  return m->data_length >= n && std::memcmp(m->data, prefix, n) == 0;
}

/// The saved APPn and COM segments, but those the compressor writes itself (JFIF, Adobe) and an
/// older restart index (it would no longer match).
void copy_markers(transcoder& t) {
  for (jpeg_saved_marker_ptr m = t.in.marker_list; m != nullptr; m = m->next) {
    if ((t.out.write_JFIF_header && m->marker == JPEG_APP0 && starts_with(m, "JFIF", 5)) ||
        (t.out.write_Adobe_marker && m->marker == JPEG_APP0 + 14 && starts_with(m, "Adobe", 5)) ||
        (m->marker == JPEG_APP0 + 9 && is_restart_index_segment(m->data, m->data_length))) {
      continue;
    }
    jpeg_write_marker(&t.out, m->marker, m->data, m->data_length);
  }
}

/// Why the JPEG is kept as it is, after its header; nullptr when it can be rewritten.
const char* kept_because(const jpeg_decompress_struct& in) {
  if (in.progressive_mode) {
    return "progressive";
  }
  if (in.arith_code) {
    return "arithmetic-coded";
  }
  if (in.jpeg_color_space == JCS_CMYK || in.jpeg_color_space == JCS_YCCK) {
    return "CMYK";
  }
  return nullptr;
}

// Transcodes into `*buffer` (malloc'd by libjpeg, the caller frees it); false on an error.
// `reason` is set when the JPEG is kept as it is.
bool transcode(transcoder& t, const std::uint8_t* data, std::size_t size, unsigned char** buffer,
               unsigned long* length, const char** reason) {
  if (setjmp(t.errors.failed) != 0) {
    return false;
  }
  jpeg_mem_src(&t.in, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&t.in, JPEG_COM, max_marker_length);
  for (int m = 0; m < 16; ++m) {
    jpeg_save_markers(&t.in, JPEG_APP0 + m, max_marker_length);
  }
  jpeg_read_header(&t.in, TRUE);
  if ((*reason = kept_because(t.in)) != nullptr) {
    return true;
  }
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&t.in);
  jpeg_copy_critical_parameters(&t.in, &t.out);
  t.out.restart_in_rows = 1;
  t.out.optimize_coding = TRUE;
  jpeg_mem_dest(&t.out, buffer, length);
  jpeg_write_coefficients(&t.out, coefficients);
  copy_markers(t);
  jpeg_finish_compress(&t.out);
  jpeg_finish_decompress(&t.in);
  return true;
}

}  // namespace

restart_rewrite add_restart_index(const std::uint8_t* data, std::size_t size) {
  if (size < 3 || data[0] != 0xFF || data[1] != 0xD8 || data[2] != 0xFF) {
    return {std::nullopt, "not a JPEG"};
  }
  transcoder t{};
  t.errors.strict = true;  // corrupt data is left for the loader to quarantine
  attach(t.errors, reinterpret_cast<j_common_ptr>(&t.in));
  jpeg_create_decompress(&t.in);
  attach(t.errors, reinterpret_cast<j_common_ptr>(&t.out));
  jpeg_create_compress(&t.out);
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  const char* reason = nullptr;
  const bool ok = transcode(t, data, size, &buffer, &length, &reason);
  jpeg_destroy_compress(&t.out);
  jpeg_destroy_decompress(&t.in);
  restart_rewrite result;
  if (!ok) {
    result.kept_because = std::string("libjpeg: ") + t.errors.message;
  } else if (reason != nullptr) {
    result.kept_because = reason;
  } else {
    std::vector<std::uint8_t> rewritten(buffer, buffer + length);
    result.jpeg = with_restart_index(rewritten);
    if (!result.jpeg) {
      result.kept_because = "no restart marker after every MCU row";
    }
  }
  std::free(buffer);
  return result;
}

}  // namespace conveyor

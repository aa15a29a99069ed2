#include "core/codecs/jpeg_two_part_source.hpp"

#include <jerror.h>

namespace conveyor {
namespace {

struct two_part_source {
  jpeg_source_mgr pub;  // first: libjpeg sees a jpeg_source_mgr*
  const JOCTET* tail;
  std::size_t tail_size;
  bool in_tail;
  int shift;
};

const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};

two_part_source* source_of(j_decompress_ptr cinfo) {
  return reinterpret_cast<two_part_source*>(cinfo->src);
}

void init_source(j_decompress_ptr /*cinfo*/) {}

void term_source(j_decompress_ptr /*cinfo*/) {}

boolean fill_input_buffer(j_decompress_ptr cinfo) {
  auto* src = source_of(cinfo);
  if (!src->in_tail) {
    src->in_tail = true;
    src->pub.next_input_byte = src->tail;
    src->pub.bytes_in_buffer = src->tail_size;
    if (src->tail_size > 0) {
      return TRUE;
    }
  }
  WARNMS(cinfo, JWRN_JPEG_EOF);
  src->pub.next_input_byte = fake_eoi;
  src->pub.bytes_in_buffer = 2;
  return TRUE;
}

void skip_input_data(j_decompress_ptr cinfo, long count) {
  auto* src = source_of(cinfo);
  if (count <= 0) {
    return;
  }
  auto n = static_cast<std::size_t>(count);
  while (n > src->pub.bytes_in_buffer) {
    n -= src->pub.bytes_in_buffer;
    const bool was_tail = src->in_tail;
    fill_input_buffer(cinfo);
    if (was_tail) {
      return;  // past the end: the fake EOI stays to be read
    }
  }
  src->pub.next_input_byte += n;
  src->pub.bytes_in_buffer -= n;
}

boolean resync_to_restart(j_decompress_ptr cinfo, int desired) {
  auto* src = source_of(cinfo);
  if (cinfo->unread_marker == JPEG_RST0 + ((desired + src->shift) & 7)) {
    cinfo->unread_marker = 0;  // the marker the tail has here: go on
    return TRUE;
  }
  return jpeg_resync_to_restart(cinfo, desired);
}

}  // namespace

void jpeg_two_part_src(j_decompress_ptr cinfo, const std::uint8_t* head, std::size_t head_size,
                       const std::uint8_t* tail, std::size_t tail_size, int restart_shift) {
  auto* src = static_cast<two_part_source*>((*cinfo->mem->alloc_small)(
      reinterpret_cast<j_common_ptr>(cinfo), JPOOL_PERMANENT, sizeof(two_part_source)));
  src->pub.init_source = init_source;
  src->pub.fill_input_buffer = fill_input_buffer;
  src->pub.skip_input_data = skip_input_data;
  src->pub.resync_to_restart = resync_to_restart;
  src->pub.term_source = term_source;
  src->pub.next_input_byte = head;
  src->pub.bytes_in_buffer = head_size;
  src->tail = tail;
  src->tail_size = tail_size;
  src->in_tail = false;
  src->shift = restart_shift & 7;
  cinfo->src = &src->pub;
}

}  // namespace conveyor

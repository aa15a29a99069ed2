#pragma once
/// A libjpeg data source over two pieces of memory read as one stream, the second not copied:
/// a JPEG's header (patched) followed by its entropy data from a restart marker on (the
/// restart index, restart_index.hpp). The restart markers of the second piece are numbered
/// from RST`restart_shift` where the decoder counts from RST0: they are accepted as the ones
/// expected, without libjpeg's warning; any other marker is resynchronised as libjpeg does.

#include <cstddef>
#include <cstdint>
#include <cstdio>

// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>

namespace conveyor {

/// Sets `cinfo`'s source (allocated in its permanent pool, as jpeg_mem_src does). Past the end
/// of `tail`, the stream ends with a warning and an EOI marker, as jpeg_mem_src's does. Both
/// pieces must outlive the decode.
void jpeg_two_part_src(j_decompress_ptr cinfo, const std::uint8_t* head, std::size_t head_size,
                       const std::uint8_t* tail, std::size_t tail_size, int restart_shift);

}  // namespace conveyor

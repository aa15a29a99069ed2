#pragma once
/// Error handling for calls into libjpeg-turbo's libjpeg API (jpeg_region.cpp,
/// jpeg_restart.cpp). libjpeg reports an error through a callback that must not return: it
/// jumps back to the setjmp of the call in progress. Only trivially destructible objects may
/// live in the frames it jumps over; callers keep the rest (pixels, vectors) outside them.

#include <csetjmp>
#include <cstddef>
#include <cstdio>

// jpeglib.h needs FILE and size_t declared before it.
#include <jpeglib.h>

namespace conveyor {

/// Where an error jumps to, and its message. One per libjpeg object (or pair of objects, for a
/// transcode), set with attach().
struct libjpeg_errors {
  jpeg_error_mgr manager;
  std::jmp_buf failed;
  bool strict = true;  ///< warnings (corrupt data, which libjpeg fills with grey) are errors
  char message[JMSG_LENGTH_MAX] = {};
};

/// Routes `object`'s errors (and, when strict, its warnings) to `errors`: the message is kept
/// and control jumps to errors.failed. Call before jpeg_create_*.
void attach(libjpeg_errors& errors, j_common_ptr object);

}  // namespace conveyor

#include "core/codecs/libjpeg_session.hpp"

namespace conveyor {
namespace {

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* e = static_cast<libjpeg_errors*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->failed, 1);
}

// Warnings (level -1) are errors when strict; trace messages (level >= 0) are dropped.
void on_message(j_common_ptr cinfo, int level) {
  auto* e = static_cast<libjpeg_errors*>(cinfo->client_data);
  if (level < 0 && e->strict) {
    on_error(cinfo);
  }
}

}  // namespace

void attach(libjpeg_errors& errors, j_common_ptr object) {
  object->err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = on_error;
  errors.manager.emit_message = on_message;
  object->client_data = &errors;
}

}  // namespace conveyor

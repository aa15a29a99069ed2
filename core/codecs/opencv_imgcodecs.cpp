#include "core/codecs/opencv_imgcodecs.hpp"

#include <dlfcn.h>

#include <climits>

namespace conveyor {
namespace {

// The two entry points, by their mangled names (the C++ ABI of the soname's OpenCV version).
using imdecode_fn = cv::Mat (*)(const cv::_InputArray&, int);
using imencode_fn = bool (*)(const std::string&, const cv::_InputArray&, std::vector<std::uint8_t>&,
                             const std::vector<int>&);
constexpr const char* imdecode_symbol = "_ZN2cv8imdecodeERKNS_11_InputArrayEi";
constexpr const char* imencode_symbol =
    "_ZN2cv8imencodeERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEERKNS_11_"
    "InputArrayERSt6vectorIhSaIhEERKSB_IiSaIiEE";

struct imgcodecs {
  imdecode_fn imdecode = nullptr;
  imencode_fn imencode = nullptr;
  std::string failure;  ///< why it could not be loaded; empty when it was
};

std::string dl_failure() {
  const char* why = ::dlerror();
  return why ? why : "unknown dlopen failure";
}

imgcodecs open_imgcodecs() {
  imgcodecs out;
  const std::string soname = CONVEYOR_IMGCODECS_SONAME;
  // Never closed: OpenCV's codecs keep global state for the life of the process.
  void* library = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    out.failure = "cannot load OpenCV's image codecs (" + soname + "): " + dl_failure();
    return out;
  }
  out.imdecode = reinterpret_cast<imdecode_fn>(::dlsym(library, imdecode_symbol));
  out.imencode = reinterpret_cast<imencode_fn>(::dlsym(library, imencode_symbol));
  if (!out.imdecode || !out.imencode) {
    out.failure = soname + " lacks cv::imdecode or cv::imencode of this build's OpenCV ABI";
  }
  return out;
}

const imgcodecs& loaded() {
  static const imgcodecs codecs = open_imgcodecs();  // once, thread-safe
  return codecs;
}

}  // namespace

expected<cv::Mat> opencv_imdecode(const std::uint8_t* data, std::size_t size, int flags) {
  const auto& codecs = loaded();
  if (!codecs.failure.empty()) {
    return error{errc::decode_error, codecs.failure};
  }
  if (size > static_cast<std::size_t>(INT_MAX)) {
    return error{errc::decode_error,
                 "too large for OpenCV's decoders: " + std::to_string(size) + " bytes"};
  }
  try {
    return codecs.imdecode(cv::_InputArray(data, static_cast<int>(size)), flags);
  } catch (const cv::Exception& e) {
    return error{errc::decode_error, std::string("OpenCV: ") + e.what()};
  }
}

expected<std::vector<std::uint8_t>> opencv_imencode(const std::string& extension,
                                                    const cv::Mat& image,
                                                    const std::vector<int>& params) {
  const auto& codecs = loaded();
  if (!codecs.failure.empty()) {
    return error{errc::io_error, codecs.failure};
  }
  std::vector<std::uint8_t> bytes;
  try {
    if (!codecs.imencode(extension, image, bytes, params)) {
      return error{errc::io_error, "OpenCV cannot encode the image as " + extension};
    }
  } catch (const cv::Exception& e) {
    return error{errc::io_error, std::string("OpenCV: ") + e.what()};
  }
  return bytes;
}

}  // namespace conveyor

# Every third-party library comes from Debian's archive (scripts/install-deps installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
# The library links OpenCV's core and imgproc (CONVEYOR_OPENCV_LIBS). imgcodecs (and the ~180
# MB of codec, GIS and GUI libraries behind it) is loaded only when a non-JPEG image is decoded
# or an image encoded (core/codecs/opencv_imgcodecs.hpp), by the soname found here; the tests'
# fixtures and conveyor-analyze link it (OpenCV_LIBS). A lean build leaves it out: TurboJPEG
# decodes and encodes JPEG, and other formats are refused.
set(CONVEYOR_OPENCV_COMPONENTS core imgproc)
list(TRANSFORM CONVEYOR_OPENCV_COMPONENTS PREPEND opencv_ OUTPUT_VARIABLE CONVEYOR_OPENCV_LIBS)
if(CONVEYOR_LEAN)
  find_package(OpenCV REQUIRED COMPONENTS ${CONVEYOR_OPENCV_COMPONENTS})
else()
  find_package(OpenCV REQUIRED COMPONENTS ${CONVEYOR_OPENCV_COMPONENTS} imgcodecs)
  get_target_property(CONVEYOR_IMGCODECS_SONAME opencv_imgcodecs IMPORTED_SONAME_RELEASE)
  if(NOT CONVEYOR_IMGCODECS_SONAME)
    get_target_property(CONVEYOR_IMGCODECS_SONAME opencv_imgcodecs IMPORTED_SONAME)
  endif()
  if(NOT CONVEYOR_IMGCODECS_SONAME)
    message(FATAL_ERROR "OpenCV's opencv_imgcodecs target names no soname to load at run time")
  endif()
endif()
find_package(spdlog REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
find_package(CAF 0.17.6 EXACT REQUIRED COMPONENTS core io openssl)
find_package(OpenSSL REQUIRED)  # libcrypto: HMAC of served resume states and cluster proofs
find_package(CURL REQUIRED)  # libcurl: datasets in object storage (core/remote)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
# libjpeg-turbo's libjpeg API: partial (region) decodes, which TurboJPEG 2.1 lacks.
pkg_check_modules(LIBJPEG REQUIRED IMPORTED_TARGET libjpeg)
# The decoders of a sample's other parts (core/codecs): PNG, audio, JSON, UTF-8 checks.
find_package(PNG REQUIRED)
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
# Speech features (core/audio): FFTs and resampling.
pkg_check_modules(FFTW3 REQUIRED IMPORTED_TARGET fftw3)
pkg_check_modules(SOXR REQUIRED IMPORTED_TARGET soxr)
find_package(nlohmann_json 3 REQUIRED)
find_package(utf8cpp REQUIRED)
# /metrics (core/observe): prometheus-cpp's text serializer, served by cpp-httplib.
find_package(prometheus-cpp REQUIRED COMPONENTS core)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
if(CONVEYOR_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CONVEYOR_BUILD_BENCH AND NOT CONVEYOR_LEAN)
  find_package(benchmark REQUIRED)
endif()

# Every third-party library comes from Debian's archive (scripts/install-deps installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
# A lean build leaves out imgcodecs (and the ~180 MB of codec, GIS and GUI libraries behind
# it): TurboJPEG decodes and encodes JPEG, and other formats are refused.
if(CONVEYOR_LEAN)
  set(CONVEYOR_OPENCV_COMPONENTS core imgproc)
else()
  set(CONVEYOR_OPENCV_COMPONENTS core imgproc imgcodecs)
endif()
find_package(OpenCV REQUIRED COMPONENTS ${CONVEYOR_OPENCV_COMPONENTS})
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
if(CONVEYOR_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CONVEYOR_BUILD_BENCH AND NOT CONVEYOR_LEAN)
  find_package(benchmark REQUIRED)
endif()

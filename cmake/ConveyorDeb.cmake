# CPack: `cpack -G DEB` (in the build directory) makes one .deb of what `cmake --install`
# puts in place, under /usr: the library, headers, CMake package, pkg-config file, apps and
# default topology. Runtime dependencies are found by dpkg-shlibdeps; building against the
# static library also needs the -dev packages suggested here.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME conveyor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Conveyor")
set(CPACK_PACKAGE_CONTACT "Conveyor developers <conveyor@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "actor-based data loader that keeps every GPU of a training node busy")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(CONVEYOR_IMGCODECS_SONAME)
  # Loaded at run time (core/codecs/opencv_imgcodecs.hpp): dpkg-shlibdeps does not see it.
  # Debian names the package after the soname: libopencv_imgcodecs.so.406, libopencv-imgcodecs406.
  string(REGEX REPLACE "^libopencv_imgcodecs\\.so\\.([0-9]+)$" "libopencv-imgcodecs\\1"
         imgcodecs_package "${CONVEYOR_IMGCODECS_SONAME}")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "${imgcodecs_package}")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "libcaf-dev (= 0.17.6), libssl-dev, libopencv-dev, libspdlog-dev, libtomlplusplus-dev, libxxhash-dev, libturbojpeg0-dev, libjpeg62-turbo-dev, libpng-dev, libsndfile1-dev, libfftw3-dev, libsoxr-dev, libcurl4-openssl-dev, prometheus-cpp-dev, libcpp-httplib-dev, pkg-config")
include(CPack)

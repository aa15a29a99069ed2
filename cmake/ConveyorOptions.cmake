# Compiler flags shared by every target of the project: conveyor_warnings carries the
# warning set (and -Werror in CI); the sanitizer switch applies to the whole build.
add_library(conveyor_warnings INTERFACE)
target_compile_options(conveyor_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference
    -Wimplicit-fallthrough>
  $<$<AND:$<BOOL:${CONVEYOR_WERROR}>,$<COMPILE_LANGUAGE:CXX>>:-Werror>)

if(CONVEYOR_SANITIZE)
  # _GLIBCXX_ASSERTIONS is left off on purpose: it aborts inside CAF 0.17 (notes/caf-0.17.md §8).
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(CONVEYOR_FUZZ)
  # Coverage for libFuzzer in every library the fuzz targets link; the targets add the driver.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

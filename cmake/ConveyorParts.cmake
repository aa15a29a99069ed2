# conveyor_part(NAME [PUBLIC deps...] [PRIVATE deps...]): one room of the library, a static
# library conveyor_<NAME> built from the *.cpp of the calling directory. A room links only what
# it needs, so the layering (storage and batching without OpenCV, ...) is enforced by the
# build. Every part is recorded in the global CONVEYOR_PARTS, from which the installed
# libconveyor (static and shared) is assembled (package/CMakeLists.txt).
function(conveyor_part name)
  cmake_parse_arguments(PART "" "" "PUBLIC;PRIVATE;SOURCES" ${ARGN})
  if(NOT PART_SOURCES)
    file(GLOB PART_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  endif()
  add_library(conveyor_${name} STATIC ${PART_SOURCES})
  target_include_directories(conveyor_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_link_libraries(conveyor_${name} PUBLIC ${PART_PUBLIC}
                        PRIVATE conveyor_warnings ${PART_PRIVATE})
  set_property(GLOBAL APPEND PROPERTY CONVEYOR_PARTS conveyor_${name})
endfunction()

// libFuzzer target: arbitrary bytes as a node plugin's file. Reading its version symbol
// (core/transforms/elf_symbol.hpp) must return an error, nothing or a value, never crash or
// read out of bounds.
#include <cstddef>
#include <cstdint>

#include "core/storage/byte_source.hpp"
#include "core/transforms/elf_symbol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = conveyor::make_view_source(data, size, "fuzz.so");
  (void)conveyor::read_exported_int(*file, "conveyor_step_api_version");
  return 0;
}

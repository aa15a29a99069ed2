// A shared library's exported int read from its file, without loading it
// (core/transforms/elf_symbol.hpp): the test plugins' version symbols, and files that are no
// such library, cut short or damaged.
#include <elf.h>
#include <gtest/gtest.h>

#include <conveyor/step.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "core/storage/byte_source.hpp"
#include "core/transforms/elf_symbol.hpp"

namespace conveyor {
namespace {

constexpr const char* version_symbol = "conveyor_step_api_version";

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  auto bytes = read_whole_file(path);
  EXPECT_TRUE(bytes) << bytes.error().what();
  return bytes ? std::move(*bytes) : std::vector<std::uint8_t>{};
}

expected<std::optional<std::int32_t>> read_from(const std::vector<std::uint8_t>& bytes,
                                                std::size_t size, const char* name) {
  return read_exported_int(*make_view_source(bytes.data(), size, "plugin.so"), name);
}

TEST(ElfSymbol, APluginsVersionIsReadFromItsFile) {
  for (const auto& [path, version] : {std::pair<std::string, int>{TEST_STEPS_PLUGIN, 0},
                                      std::pair<std::string, int>{OTHER_API_PLUGIN, 41}}) {
    SCOPED_TRACE(path);
    auto file = open_file_source(path);
    ASSERT_TRUE(file) << file.error().what();
    auto value = read_exported_int(**file, version_symbol);
    ASSERT_TRUE(value) << value.error().what();
    ASSERT_TRUE(value->has_value());
    EXPECT_EQ(**value, step_api_version + version);
  }
}

TEST(ElfSymbol, ASymbolNotExportedIsNoneAndAFunctionIsNoInt) {
  const auto bytes = file_bytes(TEST_STEPS_PLUGIN);
  auto none = read_from(bytes, bytes.size(), "no_such_symbol");
  ASSERT_TRUE(none) << none.error().what();
  EXPECT_FALSE(none->has_value());
  auto function = read_from(bytes, bytes.size(), "conveyor_register_steps");
  ASSERT_FALSE(function);
  EXPECT_EQ(function.error().message(),
            "plugin.so: symbol 'conveyor_register_steps' is not a 4-byte object");
}

TEST(ElfSymbol, WhatIsNoElfSharedLibraryIsRefusedNamingTheFile) {
  const std::vector<std::uint8_t> text(100, 'x');
  auto value = read_from(text, text.size(), version_symbol);
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code(), errc::invalid_argument);
  EXPECT_EQ(value.error().message(), "plugin.so: not an ELF file");
  auto empty = read_from(text, 0, version_symbol);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message(), "plugin.so: not an ELF file (0 bytes)");
}

// Every outcome is an error or a value; AddressSanitizer (the asan preset) sees any read out of
// bounds.
TEST(ElfSymbol, EveryTruncationAndDamagedHeaderIsAnErrorNeverAnOutOfBoundsRead) {
  const auto whole = file_bytes(OTHER_API_PLUGIN);
  ASSERT_GT(whole.size(), sizeof(Elf64_Ehdr));
  for (std::size_t size = 0; size < whole.size(); size += 97) {
    // The section headers end the file: no prefix holds them.
    EXPECT_FALSE(read_from(whole, size, version_symbol)) << size;
  }
  Elf64_Ehdr header{};
  std::memcpy(&header, whole.data(), sizeof header);
  const std::size_t tables_end = header.e_shoff + std::size_t{header.e_shnum} * sizeof(Elf64_Shdr);
  ASSERT_LE(tables_end, whole.size());
  auto flip_each = [&](std::size_t from, std::size_t to) {
    for (std::size_t at = from; at < to; ++at) {
      auto damaged = whole;
      damaged[at] ^= 0xff;
      (void)read_from(damaged, damaged.size(), version_symbol);
    }
  };
  flip_each(0, sizeof header);
  flip_each(header.e_shoff, tables_end);
}

}  // namespace
}  // namespace conveyor

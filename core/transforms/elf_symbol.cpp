#include "core/transforms/elf_symbol.hpp"

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

namespace conveyor {
namespace {

constexpr std::uint64_t max_table_bytes = std::uint64_t{64} << 20;
constexpr unsigned char host_byte_order =
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

error malformed(const byte_source& file, const std::string& why) {
  return {errc::invalid_argument, file.name() + ": " + why};
}

/// `count` records of T at `offset`, all inside the file and at most max_table_bytes.
template <class T>
expected<std::vector<T>> read_table(const byte_source& file, std::uint64_t offset,
                                    std::uint64_t count, const char* what) {
  if (count > max_table_bytes / sizeof(T) || offset > file.size() ||
      count * sizeof(T) > file.size() - offset) {
    return malformed(file, std::string(what) + " (" + std::to_string(count) + " x " +
                               std::to_string(sizeof(T)) + " bytes at offset " +
                               std::to_string(offset) +
                               ") lies outside the file or is over 64 MiB");
  }
  std::vector<T> out(static_cast<std::size_t>(count));
  auto read =
      file.read_at(offset, reinterpret_cast<std::uint8_t*>(out.data()), out.size() * sizeof(T));
  if (!read) {
    return std::move(read).error();
  }
  return out;
}

/// The ELF header, when it is a 64-bit shared object's in the host's byte order with section
/// headers.
expected<Elf64_Ehdr> read_header(const byte_source& file) {
  if (file.size() < sizeof(Elf64_Ehdr)) {
    return malformed(file, "not an ELF file (" + std::to_string(file.size()) + " bytes)");
  }
  auto header = read_table<Elf64_Ehdr>(file, 0, 1, "the ELF header");
  if (!header) {
    return std::move(header).error();
  }
  const Elf64_Ehdr& h = header->front();
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) {
    return malformed(file, "not an ELF file");
  }
  if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != host_byte_order ||
      h.e_type != ET_DYN) {
    return malformed(file, "not a 64-bit ELF shared library in this host's byte order");
  }
  if (h.e_shnum == 0 || h.e_shentsize != sizeof(Elf64_Shdr)) {
    return malformed(file,
                     "has no section headers (stripped with sstrip?): its symbols cannot "
                     "be read without loading it");
  }
  return h;
}

/// The symbol `name` in `symbols`, defined in a section, or nullptr.
const Elf64_Sym* find_defined(const std::vector<Elf64_Sym>& symbols,
                              const std::vector<char>& strings, std::string_view name) {
  for (const auto& symbol : symbols) {
    const std::uint64_t at = symbol.st_name;
    if (symbol.st_shndx != SHN_UNDEF && at < strings.size() && strings.size() - at > name.size() &&
        strings[at + name.size()] == '\0' &&
        std::memcmp(strings.data() + at, name.data(), name.size()) == 0) {
      return &symbol;
    }
  }
  return nullptr;
}

/// The 4 bytes of `symbol`, a 4-byte object in one of `sections`.
expected<std::int32_t> read_value(const byte_source& file, const std::vector<Elf64_Shdr>& sections,
                                  const Elf64_Sym& symbol, std::string_view name) {
  if (ELF64_ST_TYPE(symbol.st_info) != STT_OBJECT || symbol.st_size != sizeof(std::int32_t) ||
      symbol.st_shndx >= sections.size()) {
    return malformed(file, "symbol '" + std::string(name) + "' is not a 4-byte object");
  }
  const Elf64_Shdr& section = sections[symbol.st_shndx];
  if (section.sh_type == SHT_NOBITS) {
    return 0;
  }
  if (symbol.st_value < section.sh_addr || section.sh_size < sizeof(std::int32_t) ||
      symbol.st_value - section.sh_addr > section.sh_size - sizeof(std::int32_t)) {
    return malformed(file, "symbol '" + std::string(name) + "' lies outside its section");
  }
  const std::uint64_t within = symbol.st_value - section.sh_addr;
  if (section.sh_offset > file.size() || within > file.size() - section.sh_offset) {
    return malformed(file, "symbol '" + std::string(name) + "' lies outside the file");
  }
  auto bytes = read_table<std::int32_t>(file, section.sh_offset + within, 1, "a symbol's value");
  if (!bytes) {
    return std::move(bytes).error();
  }
  return bytes->front();
}

/// The value of `name` in the dynamic symbol table `table`, one of `sections`.
expected<std::optional<std::int32_t>> find_in_dynsym(const byte_source& file,
                                                     const std::vector<Elf64_Shdr>& sections,
                                                     const Elf64_Shdr& table,
                                                     std::string_view name) {
  if (table.sh_link >= sections.size()) {
    return malformed(file, ".dynsym names no string table");
  }
  auto symbols =
      read_table<Elf64_Sym>(file, table.sh_offset, table.sh_size / sizeof(Elf64_Sym), ".dynsym");
  if (!symbols) {
    return std::move(symbols).error();
  }
  const Elf64_Shdr& names = sections[table.sh_link];
  auto strings = read_table<char>(file, names.sh_offset, names.sh_size, ".dynsym's strings");
  if (!strings) {
    return std::move(strings).error();
  }
  const Elf64_Sym* symbol = find_defined(*symbols, *strings, name);
  if (symbol == nullptr) {
    return std::optional<std::int32_t>();
  }
  auto value = read_value(file, sections, *symbol, name);
  if (!value) {
    return std::move(value).error();
  }
  return std::optional<std::int32_t>(*value);
}

}  // namespace

expected<std::optional<std::int32_t>> read_exported_int(const byte_source& file,
                                                        std::string_view name) {
  auto header = read_header(file);
  if (!header) {
    return std::move(header).error();
  }
  auto sections =
      read_table<Elf64_Shdr>(file, header->e_shoff, header->e_shnum, "the section headers");
  if (!sections) {
    return std::move(sections).error();
  }
  for (const auto& table : *sections) {
    if (table.sh_type == SHT_DYNSYM) {
      return find_in_dynsym(file, *sections, table, name);
    }
  }
  return std::optional<std::int32_t>();  // no dynamic symbols at all
}

}  // namespace conveyor

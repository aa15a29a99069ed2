#pragma once
/// Reads what a shared library exports from its file, without loading it: nothing in the
/// library runs (dlopen runs its static initialisers). How a node checks a plugin's step API
/// version before it lets the plugin run any code (plugin_loader.hpp).

#include <cstdint>
#include <optional>
#include <string_view>

#include "conveyor/error.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {

/// The value of the 4-byte object `name` that the ELF shared library in `file` exports (a
/// defined STT_OBJECT of its dynamic symbol table, .dynsym), read from the file's bytes; 0 for
/// one in a section the file holds no bytes of (.bss). std::nullopt when the library exports
/// no symbol of that name. errc::invalid_argument naming the file and what is wrong: not a
/// 64-bit ELF shared object in this host's byte order, no section headers (sstrip removes
/// them; strip keeps them), a table or the value outside the file or a table over 64 MiB, a
/// symbol of that name that is not a 4-byte object; a read's own error. Reads the ELF header,
/// the section headers, .dynsym and its string table, and the 4 bytes: never more than about
/// 130 MiB, whatever the file claims. Thread-safe as `file` is.
expected<std::optional<std::int32_t>> read_exported_int(const byte_source& file,
                                                        std::string_view name);

}  // namespace conveyor

#pragma once
/// Loads a node's topology from TOML (config/default.toml documents every key). Nothing here
/// throws: a document that does not parse or validate gives errc::invalid_config with a
/// message that names where and what, e.g.
///
///   node.toml:12:14: pipeline.batch_size: must be >= 1 (got -3)
///   node.toml:3:1: pipline: unknown key (did you mean 'pipeline'?)
///   node.toml: dataset.path: required key is missing
///   --set pipeline.batch_size=-3: pipeline.batch_size: must be >= 1 (got -3)
///
/// When a document has several problems, the first in document order is reported (then those
/// of the overrides, then missing keys). Thread-safe: no shared state.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.hpp"
#include "conveyor/error.hpp"

namespace conveyor {

/// `overrides` are `key.path=value` strings (conveyor-node --set), applied in order after the
/// document is parsed and before it is validated. The value is read as a TOML value ("32",
/// "12.5", "[0, 1]", "\"x\"", "true") or, when it is not one, as a bare string (so
/// `dataset.path=/data/x` needs no quotes). Missing tables on the key path are created; a key
/// the schema does not know is an error as it would be in the file.
///
/// errc::not_found / errc::io_error when the file cannot be read, errc::invalid_config otherwise.
expected<topology> load_topology_file(const std::filesystem::path& file,
                                      const std::vector<std::string>& overrides = {});

/// The same for a document in memory; `source_name` stands for the file name in messages
/// ("<string>" when empty). Any bytes are accepted: invalid UTF-8 is a syntax error.
expected<topology> load_topology_string(std::string_view toml, std::string_view source_name,
                                        const std::vector<std::string>& overrides = {});

}  // namespace conveyor

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "config/bucket_reader.hpp"
#include "config/collate_reader.hpp"
#include "config/load_topology.hpp"
#include "config/plugins_reader.hpp"
#include "config/schema_reader.hpp"
#include "config/section_readers.hpp"
#include "config/topology_overrides.hpp"
#include "config/transform_schema.hpp"
#include "core/storage/byte_source.hpp"

namespace conveyor {
namespace {

using config_detail::report;
using config_detail::table_reader;

/// Reads the table `key` of `root` with `read`, then rejects the keys `read` did not ask for.
template <class Section>
Section read_section(table_reader& root, std::string_view key,
                     Section (*read)(table_reader& section)) {
  table_reader section = root.table(key);
  Section out = read(section);
  section.reject_unknown_keys();
  return out;
}

/// A Python Dataset's __getitem__ is its whole chain, and its fields are known only once its
/// first sample is: what names steps or fields is refused, naming the key.
void refuse_for_python(table_reader& root, const batching_config& batching) {
  for (const char* key : {"transform", "collate"}) {
    if (const auto* value = root.find(key)) {
      root.fail(*value, key,
                "is not read with dataset.format = \"python\": the Dataset's __getitem__ "
                "makes the whole sample");
    }
  }
  if (!batching.bucket_by.empty()) {
    root.fail(*root.find("batching"), "batching",
              "bucket_by names a field, which a Python Dataset's samples have only once the first "
              "is made: not with dataset.format = \"python\"");
  }
}

bool has_python_step(const std::vector<transform_spec>& specs) {
  return std::any_of(specs.begin(), specs.end(), [](const transform_spec& s) {
    return std::holds_alternative<python_transform_spec>(s);
  });
}

topology read_topology(const toml::table& document, report& errors) {
  table_reader root(errors, &document, "");
  topology node;
  node.gpus = config_detail::read_gpus(root);
  node.dataset = read_section(root, "dataset", config_detail::read_dataset);
  node.pipeline = read_section(root, "pipeline", config_detail::read_pipeline);
  node.batching = read_section(root, "batching", config_detail::read_batching);
  node.trainer = read_section(root, "trainer", config_detail::read_trainer);
  node.monitor = read_section(root, "monitor", config_detail::read_monitor);
  node.serve = read_section(root, "serve", config_detail::read_serve);
  node.cache = read_section(root, "cache", config_detail::read_cache);
  node.s3 = read_section(root, "s3", config_detail::read_s3);
  node.cluster = read_section(root, "cluster", config_detail::read_cluster);
  node.supervision = read_section(root, "supervision", config_detail::read_supervision);
  node.faults = read_section(root, "faults", config_detail::read_faults);
  // Before the transforms: a plugin registers the steps they may name.
  node.plugins = read_section(root, "plugins", config_detail::read_plugins);
  if (node.dataset.format == dataset_format::python) {
    node.python = read_section(root, "python", config_detail::read_python);
    refuse_for_python(root, node.batching);
    if (!node.python.order_file.empty() && node.dataset.shuffle != shuffle_mode::none) {
      root.fail(*root.find("python"), "python.order_file",
                "is the order the trainer's sampler gave each epoch: dataset.shuffle must be "
                "false");
    }
  } else {
    auto transforms = config_detail::read_transforms(root);
    if (has_python_step(transforms.specs)) {
      node.python = read_section(root, "python", config_detail::read_python_for_steps);
    } else if (const auto* python = root.find("python")) {
      root.fail(*python, "python",
                "is read only with dataset.format = \"python\" or a step of op \"python\"");
    }
    node.collate = config_detail::read_collate(root, transforms.schema);
    config_detail::check_bucketing(root, node.batching, transforms.schema);
    node.transforms = std::move(transforms.specs);
    node.normalize_on_gpu = transforms.normalize_on_gpu;
    node.normalize_dtype = transforms.normalize_dtype;
  }
  root.reject_unknown_keys();
  node.source = errors.document();
  return node;
}

/// "<document>:<line>:<column>: <toml++'s description>".
error syntax_error(const std::string& document, const toml::parse_error& failure) {
  const auto& at = failure.source().begin;
  return error(errc::invalid_config, document + ":" + std::to_string(at.line) + ":" +
                                         std::to_string(at.column) + ": " +
                                         std::string(failure.description()));
}

/// Parses, applies the overrides, validates. Throws what toml::parse throws.
expected<topology> parse_and_validate(std::string_view text, const std::string& document,
                                      const std::vector<std::string>& overrides) {
  toml::table root = toml::parse(text, document);
  for (const auto& override_text : overrides) {
    if (auto applied = config_detail::apply_override(root, override_text); !applied) {
      return std::move(applied).error();
    }
  }
  report errors(document);
  topology node = read_topology(root, errors);
  if (auto first = errors.first()) {
    return std::move(*first);
  }
  return node;
}

}  // namespace

expected<topology> load_topology_string(std::string_view text, std::string_view source_name,
                                        const std::vector<std::string>& overrides) {
  std::string document = source_name.empty() ? "<string>" : std::string(source_name);
  try {
    return parse_and_validate(text, document, overrides);
  } catch (const toml::parse_error& failure) {
    return syntax_error(document, failure);
  } catch (const std::exception& failure) {
    return error(errc::invalid_config, document + ": " + failure.what());
  } catch (...) {
    return error(errc::invalid_config, document + ": unexpected failure while loading");
  }
}

expected<topology> load_topology_file(const std::filesystem::path& file,
                                      const std::vector<std::string>& overrides) {
  auto source = open_file_source(file);
  if (!source) {
    return std::move(source).error();
  }
  std::vector<std::uint8_t> bytes((*source)->size());
  if (auto read = (*source)->read_at(0, bytes.data(), bytes.size()); !read) {
    return std::move(read).error();
  }
  return load_topology_string(std::string(bytes.begin(), bytes.end()), file.string(), overrides);
}

}  // namespace conveyor

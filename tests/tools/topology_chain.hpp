#pragma once
// What the probes (tests/tools/*_probe.cpp) share: the transform chain of a topology file, the
// way a node builds it.
#include <iostream>
#include <optional>

#include "config/load_topology.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor::testing {

/// The chain of topology file `path`; nullopt after printing why to stderr (a file that does
/// not load, or a chain that does not build).
inline std::optional<transform_chain> topology_chain(const char* path) {
  auto topology = load_topology_file(path, {});
  if (!topology) {
    std::cerr << topology.error().what() << "\n";
    return std::nullopt;
  }
  auto chain = transform_chain::build(topology->transforms);
  if (!chain) {
    std::cerr << chain.error().what() << "\n";
    return std::nullopt;
  }
  return std::move(*chain);
}

}  // namespace conveyor::testing

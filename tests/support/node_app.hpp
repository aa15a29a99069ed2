#pragma once
/// conveyor-node, for the tests that run it: CONVEYOR_NODE_BIN is its path (tests/CMakeLists.txt
/// defines it for them).

#include <string>
#include <utility>
#include <vector>

#include "support/app_process.hpp"

namespace conveyor::testing {

inline run_result run_node(const temp_dir& dir, const std::string& args) {
  return run_app(CONVEYOR_NODE_BIN, dir, args);
}

/// conveyor-node as a child process.
class node_process : public app_process {
 public:
  explicit node_process(std::vector<std::string> args)
      : app_process(CONVEYOR_NODE_BIN, std::move(args)) {}
};

}  // namespace conveyor::testing

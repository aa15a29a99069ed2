#pragma once
/// Python Datasets written at test time, and the launch of worker processes that run them
/// (core/python/worker_process.hpp): the setup is made by tests/python/worker_setup.py with
/// Debian's python3, as a loader makes it (spawn's preparation, the pickled dataset).

#include <cstdint>
#include <string>
#include <vector>

#include "core/python/worker_process.hpp"
#include "support/test_support.hpp"

namespace conveyor::testing {

/// Writes `source` to `dir`/`module`.py, and the setup of `module`.`cls`() (and
/// `init_fn`(worker_id) first, when given) as a loader writes it; returns the setup's path. A
/// failed setup fails the test.
std::filesystem::path write_python_setup(const temp_dir& dir, const std::string& module,
                                         const std::string& source, const std::string& cls,
                                         const std::string& init_fn = "");

/// A sampler's order as a loader writes it ([python] order_file): 8 bytes little-endian an
/// index.
std::vector<std::uint8_t> sampler_order_bytes(const std::vector<std::uint64_t>& order);

/// The worker script of the source tree (python/conveyor_worker.py).
std::string python_worker_script();

/// The launch of workers that run that setup with Debian's python3 and python_worker_script().
worker_launch python_worker_launch(const temp_dir& dir, const std::string& module,
                                   const std::string& source, const std::string& cls,
                                   const std::string& init_fn = "");

}  // namespace conveyor::testing

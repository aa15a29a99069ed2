#pragma once
/// Python Datasets written at test time, and the launch of worker processes that run them
/// (core/python/worker_process.hpp): the setup is made by tests/python/worker_setup.py with
/// Debian's python3, as a loader makes it (spawn's preparation, the pickled dataset).

#include <string>

#include "core/python/worker_process.hpp"
#include "support/test_support.hpp"

namespace conveyor::testing {

/// Writes `source` to `dir`/`module`.py and returns the launch of workers that run
/// `module`.`cls`() (and `init_fn`(worker_id) first, when given) with the worker script of the
/// source tree. A failed setup fails the test.
worker_launch python_worker_launch(const temp_dir& dir, const std::string& module,
                                   const std::string& source, const std::string& cls,
                                   const std::string& init_fn = "");

}  // namespace conveyor::testing

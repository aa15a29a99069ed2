#pragma once
/// A topology's Python steps (`[[transform]] op = "python"`, transform_spec.hpp:
/// python_transform_spec) under the actors: one pool of Python worker processes per pipeline
/// (worker_pool.hpp; at most its preprocessors plus its straggler actors), spawned as
/// `python -c "from conveyor import conveyor_worker; ..."`, whose zygote imports every step's
/// function once; a worker runs any of them. A step is an external step (worker_step.hpp): the
/// actor sends the fields the step reads (their bytes in a memfd; an image as uint8 [h, w, c]) and
/// waits for the fields it makes, with hand-offs, hang detection, retries and quarantine as for a
/// Python Dataset. What a worker answers is checked before it touches the sample: exactly the
/// fields the step makes, each an array of the dtype, rank and fixed extents it was declared with;
/// else the sample fails naming the step, the field and what was wrong (then it is retried,
/// then quarantined).

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/python/worker_pool.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// How the workers of a pipeline's Python steps start.
struct python_steps_launch {
  std::string interpreter = "/usr/bin/python3";  ///< it must import the conveyor package
  std::chrono::milliseconds start_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds hang_timeout{std::chrono::seconds(300)};  ///< one call at most
  std::size_t workers = 1;  ///< at most this many live (> 0)
};

/// The workers' setup for `steps` (JSON, as python/conveyor_worker.py reads it): each step's
/// name for errors, function, and the fields it reads and makes, in order.
std::string python_steps_setup(const std::vector<const python_transform_spec*>& steps);

/// Binds every Python step of `specs` (none: nothing happens) to one pool of workers started
/// now, all of them (a worker started while samples wait holds them for seconds), so that the
/// chain built from `specs` runs them. errc::invalid_config naming the step, its function and
/// what went wrong: the interpreter does not start or does not import conveyor, the function's
/// module does not import, it has no such attribute, or it is not callable.
expected<void> bind_python_steps(std::vector<transform_spec>& specs,
                                 const python_steps_launch& how);

}  // namespace conveyor

#pragma once
// Waiting for batches from Python, for both transports (a node's feed, a pipeline in this
// process): waits without the GIL in short slices that let Ctrl-C through, and the iterator of
// one epoch's batches. Called with the GIL held.

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "conveyor/batch.hpp"
#include "conveyor/error.hpp"

namespace conveyor_python {

namespace py = pybind11;

/// A call that waits at most its argument for the next batch and then gives up with
/// errc::timed_out (client::next_for, pipeline::next_for). Called without the GIL.
using timed_take = std::function<conveyor::expected<conveyor::batch>(std::chrono::milliseconds)>;

/// Calls `take` in slices of at most `slice` (module_errors.hpp), without the GIL, checking
/// for signals between them (Ctrl-C raises KeyboardInterrupt), until it gives a batch or an
/// error other than timed_out, or `timeout_s` has passed: then the last timed_out it gave.
conveyor::expected<conveyor::batch> take_in_slices(const timed_take& take, double timeout_s);

/// Raises unless `epoch` is the one `name` is in, having finished `ended` of its `epochs`
/// epochs (conveyor::epoch_range's rule): conveyor.EndOfData for an epoch there is not,
/// conveyor.Error for one out of turn.
void check_turn(const std::string& name, std::uint64_t epoch, std::uint64_t ended,
                std::uint64_t epochs);

/// The non-empty batches of one epoch of one rank (GPU), up to the epoch's last, as Python
/// iterates them. Nothing is released here: a batch goes back when its Batch is released or
/// collected. Leaving the loop early keeps the rest of the epoch for the next iterator.
struct EpochIterator {
  py::object owner;                       ///< the Feed or Pipeline; its batches keep it
  std::function<conveyor::batch()> take;  ///< the next batch of the rank; raises on errors
  std::function<std::uint64_t()> ended;   ///< epochs the rank has finished: the one it is in
  std::string name;                       ///< "rank 0 of job 0", "gpu 1": for messages
  std::uint64_t epoch = 0;
  bool done = false;

  py::object next();
};

/// Registers the iterator's class in `m`. Once, by _native.
void bind_epoch_iterator(py::module_& m);

}  // namespace conveyor_python

#pragma once
// conveyor.Batch: one batch of one GPU (rank) as Python sees it, whichever transport brought
// it: a node's feed (conveyor.attach, module _native) or a pipeline in this process
// (conveyor.Pipeline, module _pipeline). Its fields are NumPy arrays over the batch's memory,
// without a copy; the batch goes back when it is released or collected. _native registers the
// class once; _pipeline makes instances of the same class (pybind11 shares registered types
// between modules), so both give the same conveyor.Batch.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/batch.hpp"

namespace conveyor_python {

namespace py = pybind11;

struct Batch {
  // Declared first, destroyed last: the batch goes back before its owner may close.
  py::object owner;  // the Feed or Pipeline: its memory outlives the batch
  conveyor::batch batch;
  bool released = false;
  // Copied when the batch is taken, so that they stay readable after release().
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  int rank = 0;
  std::size_t size = 0;
  std::uint64_t ready_ns = 0;
  bool last_in_epoch = false;
  bool writable = false;
  std::vector<std::int32_t> labels;
  std::vector<std::uint64_t> sample_ids;
  std::vector<std::string> keys;

  Batch(conveyor::batch b, py::object owner_object);
  Batch(Batch&&) = default;
  Batch& operator=(Batch&&) = delete;
  /// A batch collected without release() is given back here.
  ~Batch();

  void release() noexcept;
  /// Gives the batch back once the work queued on CUDA stream `stream` (an address, as torch's
  /// Stream.cuda_stream; 1: the legacy default stream) has completed.
  void release_after(std::uintptr_t stream) noexcept;
};

/// `b` as a conveyor.Batch owned by `owner` (which it keeps alive). The class must have been
/// registered (bind_batch(), by _native: import it first).
py::object make_batch(py::object owner, conveyor::batch b);

/// Registers conveyor.Batch in `m`. Once, by _native.
void bind_batch(py::module_& m);

}  // namespace conveyor_python

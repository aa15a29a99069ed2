#pragma once
/// A Python Dataset under the actors: the step that runs dataset[i] in a worker process of the
/// pipeline's pool (worker_pool.hpp), as an external step (core/transforms/external_step.hpp):
/// a preprocessor takes a worker and asks it for the sample; a sample past its budget is handed
/// off, its worker still at it, to a straggler actor that waits for the rest; nothing is redone.
/// The sample's draws are seeded from (epoch seed, index, step) as every step's are, so they do
/// not depend on which worker ran it, nor on a retry.
///
/// The sample's fields are those of the first sample (probe_python_dataset): each later sample
/// must have the same structure, and each array the same dtype and shape; one that has not is
/// refused naming its index, the element and both types (it is quarantined, as a sample that
/// cannot go into a batch is), and so is a str, bytes or pickled element past its field's
/// collate.max_values bytes, naming python.max_text_bytes. The label field is dropped: a Python
/// sample carries its own.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/error.hpp"
#include "core/base/field_schema.hpp"
#include "core/python/worker_pool.hpp"
#include "core/transforms/transform_spec.hpp"

namespace conveyor {

/// What a Python Dataset's samples hold, as its first sample shows it.
struct python_sample_layout {
  std::string structure;  ///< the first sample's structure (JSON, as its worker wrote it)
  /// Its leaves in order, each a field named by its path ("sample.0", "sample.image"): the
  /// dtype and shape of its first sample (a str, bytes or pickled leaf is a byte string whose
  /// extent varies).
  std::vector<field_spec> fields;
  std::vector<leaf_kind> leaf_kinds;       ///< per field: what it was in Python (worker_protocol)
  std::vector<std::uint64_t> first_bytes;  ///< per field: the first sample's bytes of it
};

/// The bytes a str, bytes or pickled element of one sample may take: `max_text_bytes`
/// (python.max_text_bytes) where it is set, else 4 times the first sample's `first_bytes`, at
/// least 1 MiB; at most 2^30.
std::uint64_t python_text_room(std::uint64_t max_text_bytes, std::uint64_t first_bytes);

/// Runs dataset[index] in a worker of `pool`, seeded with `seed`, waiting at most `timeout`,
/// and reads its layout (the worker goes back to the pool, warm). Errors: the worker's (it did
/// not start; dataset[index] raised; errc::timed_out), errc::invalid_argument naming the
/// element whose type no batch can carry (an unsigned type other than uint8, more than
/// host_array::max_rank dimensions).
expected<python_sample_layout> probe_python_dataset(worker_pool& pool, std::uint64_t index,
                                                    std::uint64_t seed,
                                                    std::chrono::milliseconds timeout);

/// The built step (transform_spec) that runs dataset[i] in a worker of `pool` and writes the
/// fields of `layout`. A sample whose worker has not answered within `hang_timeout` has its
/// worker killed (the pool starts another) and fails: retried, then quarantined.
built_step_spec python_step_spec(std::shared_ptr<worker_pool> pool, python_sample_layout layout,
                                 std::chrono::milliseconds hang_timeout);

}  // namespace conveyor

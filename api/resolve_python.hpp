#pragma once
/// A topology's Python Dataset (dataset.format = "python", [python]) as a chain: the pool of
/// worker processes its preprocessors and straggler actors lease, the layout of its first
/// sample (which the node writes to python.layout_file for the loader that rebuilds samples
/// from batches) and the chain of its one step. Each str, bytes or pickled element is carried
/// ragged, at most python.max_text_bytes a sample.

#include "config/topology.hpp"
#include "conveyor/error.hpp"
#include "core/storage/sample_source.hpp"
#include "core/transforms/transform_chain.hpp"

namespace conveyor {

struct python_chain {
  transform_chain chain;
  sample_schema schema;  ///< the chain's, with the collates of its byte-string elements
};

/// Starts a worker (the first of the pool) and makes the first sample of epoch 0 in it.
/// The setup (dataset.path) is read only when a zygote is spawned: at once where the topology
/// hands the node no zygote (python.zygote_socket), else only if that one dies.
/// invalid_config naming the topology and the key: the setup (dataset.path) is no regular file
/// or empty; a
/// worker does not start (the exception its start raised: an import, unpickling or
/// worker_init_fn error); the first sample raised or has an element no batch can carry; the
/// layout file cannot be written.
expected<python_chain> resolve_python_chain(const topology& t);

/// The Python Dataset of `t` as its readers see it (core/python/python_dataset.hpp), in the
/// order python.order_file gives where it is set. invalid_config naming the topology and
/// python.order_file when that file is not a sound order of the dataset.
expected<std::shared_ptr<const sample_source>> open_python_dataset(const topology& t);

/// Binds the Python steps among `specs` (op "python", core/python/python_transform.hpp) to
/// workers started now by [python]'s interpreter, at most one per preprocessor and straggler
/// actor. invalid_config naming the topology, the step and its function when they do not start.
expected<void> bind_topology_python_steps(const topology& t, std::vector<transform_spec>& specs);

}  // namespace conveyor

// The module `conveyor._pipeline`: a topology (any recipe) run inside the Python process
// through the embedding API (include/conveyor/pipeline.hpp), its batches the same
// conveyor.Batch a node's feed gives (python/batch_view.hpp). conveyor.Pipeline
// (python/conveyor/pipeline.py) is this module's Pipeline with its `set` turned into --set
// overrides; `import conveyor` does not load it, so that a process that only attaches to a node
// (or a DataLoader's worker) never maps the runtime (CAF, OpenCV):
//
//   p = conveyor.Pipeline(conveyor.recipes.path("unet3d-kits19"), set={"dataset.path": d})
//   for e in range(p.info["start_epoch"], p.epochs):
//       for b in p.epoch(e, gpu=0):
//           x = torch.from_numpy(b["image"])          # the pipeline's buffer, no copy
//
// Every wait releases the GIL and wakes every 100 ms to let Ctrl-C through (KeyboardInterrupt);
// opening and closing (the runtime's start and stop) run without the GIL too. Errors are the
// classes of conveyor._native (conveyor.Error and its subclasses).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/pipeline.hpp"
#include "core/base/allocator_tuning.hpp"
#include "python/batch_view.hpp"
#include "python/batch_waits.hpp"
#include "python/context_manager.hpp"
#include "python/module_errors.hpp"
#include "python/run_views.hpp"

namespace py = pybind11;

namespace {

using namespace conveyor_python;  // NOLINT(google-build-using-namespace): the module's own parts

/// One pipeline and what Python needs of it. Touched only with the GIL held; the waits inside
/// next() run without it (one thread per GPU may wait at once).
struct Pipeline {
  std::string topology;
  std::optional<conveyor::pipeline> pipeline;  ///< empty once closed and no wait is left
  conveyor::pipeline_info info;
  /// Epochs each GPU has finished (the one it is in): every batch is taken through this
  /// module, so it counts the epochs' last batches itself (as the C++ epoch range does).
  std::vector<std::uint64_t> ended;
  int waiting = 0;  ///< next() calls waiting without the GIL: the pipeline must outlive them
  bool closed = false;

  Pipeline() = default;
  Pipeline(Pipeline&&) = default;
  Pipeline& operator=(Pipeline&&) = default;
  /// A pipeline collected without close() stops here (its actors, its workers).
  ~Pipeline() { drop(); }

  conveyor::pipeline& open() {
    if (closed) {
      raise_usage("the pipeline of " + topology + " is closed");
    }
    return *pipeline;
  }
  /// Destroys the pipeline once it is closed and no wait uses it (without the GIL: it stops
  /// every actor).
  void drop() {
    if (pipeline && waiting == 0) {
      without_gil([this] { pipeline.reset(); });
    }
  }
  void close() {
    if (pipeline && !closed) {
      closed = true;
      without_gil([this] { pipeline->shutdown(); });  // wakes waits in other threads
    }
    drop();
  }
};

std::string gpu_name(int gpu) {
  return "gpu " + std::to_string(gpu);
}

/// Opens `topology` with `overrides` (key=value, as conveyor-node --set) from `state` (a
/// state_dict(), its bytes, or None), without the GIL. Any error is a plain conveyor.Error
/// with the C++ message (file, line, key): a missing file is not the end of the data.
/// `keep_freed_memory`: raises glibc's trim and mmap thresholds for the whole process, as
/// conveyor-node does (core/base/allocator_tuning.hpp): without it every batch's buffers are
/// mapped and faulted in afresh (UNet3D: 3.5x the node's CPU).
Pipeline open_pipeline(const std::string& topology, const std::vector<std::string>& overrides,
                       const py::object& state, bool keep_freed_memory) {
  auto resume = state_from(state, "conveyor.Pipeline", "Pipeline");
  if (keep_freed_memory) {
    conveyor::keep_freed_memory_for_reuse();
  }
  std::optional<conveyor::expected<conveyor::pipeline>> got;
  {
    py::gil_scoped_release nogil;
    got.emplace(resume.bytes.empty() ? conveyor::pipeline::open(topology, overrides)
                                     : conveyor::pipeline::open(topology, overrides, resume));
  }
  if (!*got) {
    raise_plain(got->error());
  }
  Pipeline p;
  p.topology = topology;
  p.pipeline.emplace(std::move(**got));
  p.info = p.pipeline->info();
  p.ended.assign(static_cast<std::size_t>(p.info.gpus), p.info.start_epoch);
  return p;
}

/// Raises conveyor.Error unless `gpu` is one of the pipeline's.
void check_gpu(const Pipeline& p, int gpu) {
  if (gpu < 0 || gpu >= p.info.gpus) {
    raise_usage(gpu_name(gpu) + " is not one of the " + std::to_string(p.info.gpus) +
                " of this pipeline");
  }
}

/// The next batch of `gpu`, waiting at most pipeline.next_timeout_s in GIL-free slices that
/// let Ctrl-C through. Counts the epochs as their last batches pass.
conveyor::batch take_next(Pipeline& p, int gpu) {
  auto& pipeline = p.open();
  check_gpu(p, gpu);
  struct wait_scope {  // the pipeline outlives this wait, even if close() comes meanwhile
    Pipeline& p;
    explicit wait_scope(Pipeline& of) : p(of) { ++p.waiting; }
    ~wait_scope() {
      --p.waiting;
      if (p.closed) {
        p.drop();
      }
    }
    wait_scope(const wait_scope&) = delete;
    wait_scope& operator=(const wait_scope&) = delete;
  };
  std::optional<conveyor::expected<conveyor::batch>> got;
  {
    wait_scope scope(p);
    got.emplace(take_in_slices(
        [&pipeline, gpu](std::chrono::milliseconds wait) { return pipeline.next_for(gpu, wait); },
        p.info.next_timeout_s));
  }
  if (!*got) {
    if (got->error().code() == conveyor::errc::timed_out) {
      raise_timeout(gpu_name(gpu) + ": no batch within pipeline.next_timeout_s = " +
                    py::str(py::float_(p.info.next_timeout_s)).cast<std::string>() +
                    " s (every GPU's batches must be taken concurrently, one thread per GPU: "
                    "the GPUs advance together)");
    }
    raise_error(got->error());
  }
  conveyor::batch b = std::move(**got);
  if (b.last_in_epoch()) {
    p.ended[static_cast<std::size_t>(gpu)] = b.epoch() + 1;
  }
  return b;
}

/// The batches of epoch `epoch` of `gpu` (EpochIterator), which must be the one it is in.
EpochIterator epoch_of(py::object self, std::uint64_t epoch, int gpu) {
  Pipeline& p = self.cast<Pipeline&>();
  p.open();
  check_gpu(p, gpu);
  const auto g = static_cast<std::size_t>(gpu);
  check_turn(gpu_name(gpu), epoch, p.ended[g], p.info.epochs);
  return EpochIterator{self, [&p, gpu] { return take_next(p, gpu); },
                       [&p, g] { return p.ended[g]; }, gpu_name(gpu), epoch};
}

py::dict info_dict(const conveyor::pipeline_info& i) {
  using py::arg;
  return py::dict(arg("gpus") = i.gpus, arg("preprocessors") = i.preprocessors,
                  arg("readers") = i.readers, arg("epochs") = i.epochs,
                  arg("dataset_size") = i.dataset_size, arg("batch_size") = i.batch_size,
                  arg("prefetch_batches") = i.prefetch_batches,
                  arg("window_samples") = i.window_samples, arg("policy") = i.policy,
                  arg("class_names") = i.class_names, arg("next_timeout_s") = i.next_timeout_s,
                  arg("start_epoch") = i.start_epoch, arg("delivered_before") = i.delivered_before,
                  arg("seed") = i.seed, arg("shuffle") = i.shuffle,
                  arg("shuffle_block") = i.shuffle_block, arg("shuffle_span") = i.shuffle_span,
                  arg("epoch_samples") = i.epoch_samples, arg("metrics_port") = i.metrics_port);
}

std::string repr(const Pipeline& p) {
  return "<conveyor.Pipeline " + p.topology + ", " + std::to_string(p.info.gpus) + " gpus, " +
         std::to_string(p.info.epochs) + " epochs" + (p.closed ? ", closed>" : ">");
}

}  // namespace

PYBIND11_MODULE(_pipeline, m) {
  m.doc() = "A Conveyor topology run in this process (conveyor.Pipeline).";
  // conveyor.Batch, the epoch iterator and the errors are _native's: one class of each.
  import_exceptions(py::module_::import("conveyor._native"));

  py::class_<Pipeline> pipeline(m, "Pipeline",
                                "A topology run in this process: its batches as conveyor.Batch "
                                "(conveyor.Pipeline turns `set` into the overrides).");
  pipeline
      .def(py::init(&open_pipeline), py::arg("topology"), py::arg("overrides"),
           py::arg("state") = py::none(), py::arg("keep_freed_memory") = true,
           "Opens the topology file `topology` with `overrides` ([\"key.path=value\"], as "
           "conveyor-node --set) and starts it; `state`: a state_dict() of an earlier run, to go "
           "on exactly from there. conveyor.Error naming the file, line and key on bad input. "
           "`keep_freed_memory`: raise glibc's trim threshold (256 MiB) and mmap threshold (32 "
           "MiB) for the whole process, as conveyor-node does, so that batch buffers are reused "
           "instead of mapped afresh.")
      .def_property_readonly("epochs", [](const Pipeline& p) { return p.info.epochs; })
      .def_property_readonly("gpus", [](const Pipeline& p) { return p.info.gpus; })
      .def_property_readonly(
          "info", [](const Pipeline& p) { return info_dict(p.info); },
          "How the pipeline was set up, every \"auto\" resolved: gpus, preprocessors, readers, "
          "epochs, dataset_size, batch_size, prefetch_batches, window_samples, policy, "
          "class_names, next_timeout_s, start_epoch, delivered_before, seed, shuffle (\"global\", "
          "\"blocks\" or \"none\"), shuffle_block and shuffle_span (samples a block, blocks a "
          "span; 0 unless blocks), epoch_samples.")
      .def_property_readonly("topology", [](const Pipeline& p) { return p.topology; })
      .def_property_readonly("closed", [](const Pipeline& p) { return p.closed; })
      .def(
          "next",
          [](py::object self, int gpu) {
            return make_batch(self, take_next(self.cast<Pipeline&>(), gpu));
          },
          py::arg("gpu") = 0,
          "The next batch of `gpu` (an epoch's end may come as an empty batch with "
          "last_in_epoch). Raises conveyor.EndOfData after the last epoch, "
          "conveyor.TimeoutError after pipeline.next_timeout_s (every GPU's batches must be "
          "taken, one thread per GPU), conveyor.Error when the trainer holds every buffer of the "
          "GPU (code resource_exhausted).")
      .def("epoch", &epoch_of, py::arg("epoch"), py::arg("gpu") = 0,
           "The non-empty batches of `epoch` for `gpu`, which must be the epoch the GPU is in. "
           "Leaving the loop early keeps the rest of the epoch for the next call.")
      .def(
          "report", [](Pipeline& p) { return report_dict(p.open().report()); },
          "The pipeline's figures, as a feed's report(): delivered, quarantined, filtered, "
          "duplicates, lost, steps_executed, retries, restarts, handoffs, hangs, finished, "
          "sample_ms.")
      .def(
          "state_dict", [](Pipeline& p) { return state_dict(p.open().state()); },
          "Where the run stands: {\"conveyor_state\": bytes}, covering every batch next() or an "
          "epoch loop returned. Save it with the model's checkpoint; Pipeline(..., state=it) "
          "goes on from exactly there.")
      .def("close", &Pipeline::close,
           "Stops the pipeline (idempotent): its actors and workers; batches still held stay "
           "readable until released.")
      .def("__repr__", &repr);
  with_block(pipeline, [](Pipeline& p) { p.close(); });
}

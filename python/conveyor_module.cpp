// The Python module `conveyor`: a trainer process attaches to a Conveyor node and reads its
// batches as NumPy arrays over the node's shared memory, without a copy (README: "Serve
// trainer processes"). A thin layer over the C++ client (include/conveyor/client.hpp):
//
//   import conveyor, torch
//   with conveyor.attach("/run/user/1000/conveyor.sock", rank=0, job=0, timeout=60) as feed:
//       for e in range(feed.info()["start_epoch"], feed.epochs):
//           for b in feed.epoch(e):
//               x = torch.from_numpy(b.images)        # the node's memory, no copy
//               y = torch.from_numpy(b.labels).long()
//               ...
//               b.release()                           # or let the batch go
//
// Every wait releases the GIL and wakes every 100 ms to let Ctrl-C through (KeyboardInterrupt);
// every other call that may block (a release, a close, a feed or batch collected) runs without
// the GIL too, so that feeds used from several threads of one process each go on.
// A node serves host memory, normalised on its CPU (float32) or as uint8 to normalise on the
// trainer's GPU. A GPU trainer may pin the feed's memory once (feed.memory(): torch's
// cudart().cudaHostRegister) and copy each batch asynchronously on a stream of its own; it then
// releases with that stream, b.release(stream=s.cuda_stream): the node hears of it once the
// copy has completed.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/batch.hpp"
#include "conveyor/client.hpp"
#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "core/batching/resume_state.hpp"
#include "core/python/draw_seed.hpp"
#include "python/batch_view.hpp"
#include "python/batch_waits.hpp"
#include "python/context_manager.hpp"
#include "python/module_errors.hpp"
#include "python/run_views.hpp"

namespace py = pybind11;

namespace {

using namespace conveyor_python;  // NOLINT(google-build-using-namespace): the module's own parts
using steady = std::chrono::steady_clock;

// --- Feed ----------------------------------------------------------------------------------

struct Feed {
  std::string socket;
  std::optional<conveyor::client> client;
  conveyor::client_info info;
  double next_timeout_s = 300;
  /// The epoch this rank is in: every batch is taken through this module, so it counts the
  /// epochs' last batches itself (as the C++ epoch range does).
  std::uint64_t current_epoch = 0;

  Feed() = default;
  Feed(Feed&&) = default;
  Feed& operator=(Feed&&) = default;
  /// A feed collected without close() closes here, which drains the socket for up to 2 s.
  ~Feed() {
    if (client) {
      without_gil([this] { client.reset(); });
    }
  }

  std::string name() const {
    return "rank " + std::to_string(info.rank) + " of job " + std::to_string(info.job);
  }
  conveyor::client& open() {
    if (!client) {
      raise_usage("the feed of " + name() + " at " + socket + " is closed");
    }
    return *client;
  }
};

/// The next batch of the feed, waiting at most its next_timeout in GIL-free slices that let
/// Ctrl-C through. Counts the epochs as their last batches pass.
conveyor::batch take_next(Feed& f) {
  auto& c = f.open();
  auto got = take_in_slices([&c](std::chrono::milliseconds wait) { return c.next_for(wait); },
                            f.next_timeout_s);
  if (!got) {
    if (got.error().code() == conveyor::errc::timed_out) {
      raise_timeout(f.name() + ": no batch from the Conveyor node at " + f.socket + " within " +
                    py::str(py::float_(f.next_timeout_s)).cast<std::string>() + " s");
    }
    raise_error(got.error());
  }
  if (got->last_in_epoch()) {
    f.current_epoch = got->epoch() + 1;
  }
  return std::move(*got);
}

/// The batches of epoch `epoch` of the feed (EpochIterator), which must be the one it is in.
EpochIterator epoch_of(py::object self, std::uint64_t epoch) {
  Feed& f = self.cast<Feed&>();
  f.open();
  check_turn(f.name(), epoch, f.current_epoch, f.info.epochs);
  return EpochIterator{self, [&f] { return take_next(f); }, [&f] { return f.current_epoch; },
                       f.name(), epoch};
}

py::dict info_dict(const conveyor::client_info& i) {
  py::dict d;
  d["rank"] = i.rank;
  d["job"] = i.job;
  d["ranks"] = i.ranks;
  d["jobs"] = i.jobs;
  d["epochs"] = i.epochs;
  d["dataset_size"] = i.dataset_size;
  d["batch_size"] = i.batch_size;
  d["slots"] = i.slots;
  d["channels"] = i.channels;
  d["height"] = i.height;
  d["width"] = i.width;
  d["dtype"] = std::string(conveyor::name_of(i.type));
  d["writable"] = i.writable;
  d["start_epoch"] = i.start_epoch;
  return d;
}

/// The feed's state_dict().
py::dict feed_state(Feed& f) {
  auto& c = f.open();
  std::optional<conveyor::expected<conveyor::run_state>> state;
  {
    py::gil_scoped_release nogil;  // a node that signs states answers in turn with the batches
    state.emplace(c.state());
  }
  if (!*state) {
    raise_error(state->error());
  }
  return state_dict(**state);
}

/// The state of a run that has ended every epoch before `first_epoch` and begun none after:
/// what attach(state=...) gives a node to start a run at that epoch.
py::bytes state_at_epoch(std::uint64_t dataset_size, std::uint64_t seed, bool shuffle,
                         std::uint64_t epochs, std::uint64_t first_epoch) {
  if (first_epoch >= epochs) {
    raise_usage("conveyor.state_at_epoch: epoch " + std::to_string(first_epoch) +
                " does not exist: there are " + std::to_string(epochs) + " epochs");
  }
  conveyor::resume_state state;
  state.dataset_size = dataset_size;
  state.seed = seed;
  state.order = conveyor::sample_order::shuffled(shuffle);
  state.epochs = epochs;
  state.first_epoch = first_epoch;
  const auto bytes = conveyor::encode(state);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Attaches, retrying in short slices while no node listens yet so that Ctrl-C gets through.
Feed attach(const py::object& socket, int rank, int job, double timeout, double next_timeout,
            const py::object& state, const py::object& expected_uid) {
  if (!(timeout >= 0) || !(next_timeout > 0)) {
    raise_usage("conveyor.attach: timeout must be >= 0 and next_timeout > 0");
  }
  auto resume = state_from(state, "conveyor.attach", "Feed");
  Feed f;
  f.socket = py::module_::import("os").attr("fsdecode")(socket).cast<std::string>();
  f.next_timeout_s = next_timeout;
  const auto deadline = steady::now() + to_ms(timeout);
  for (;;) {
    const auto left = std::chrono::duration<double>(deadline - steady::now()).count();
    conveyor::client_options options;
    options.attach_timeout_s = std::clamp(left, 0.0, 0.1);
    options.next_timeout_s = next_timeout;
    options.resume = resume;
    if (!expected_uid.is_none()) {
      options.expected_uid = expected_uid.cast<std::uint32_t>();
    }
    std::optional<conveyor::expected<conveyor::client>> got;
    {
      py::gil_scoped_release nogil;
      got.emplace(conveyor::client::attach(f.socket, rank, job, options));
    }
    if (*got) {
      f.client.emplace(std::move(**got));
      break;
    }
    const auto code = got->error().code();
    const bool again =
        code == conveyor::errc::not_found || code == conveyor::errc::resource_exhausted;
    if (!again || steady::now() >= deadline) {
      raise_error(got->error(), /*attaching=*/true);
    }
    check_signals();
  }
  f.info = f.client->info();
  f.current_epoch = f.info.start_epoch;
  return f;
}

void close_feed(Feed& f) {
  if (f.client) {
    py::gil_scoped_release nogil;  // close() drains the socket for up to 2 s
    f.client->close();
  }
  f.client.reset();
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() =
      "Batches from a Conveyor node (conveyor-node with serve.socket) as NumPy arrays over its "
      "shared memory, without a copy.";

  create_exceptions(m);

  bind_batch(m);
  bind_epoch_iterator(m);

  py::class_<Feed> feed(m, "Feed",
                        "A rank's feed of batches from a Conveyor node (conveyor.attach).");
  feed.def(
          "info", [](const Feed& f) { return info_dict(f.info); },
          "What the node serves: rank, job, ranks, jobs, epochs, dataset_size, batch_size, "
          "slots, channels, height, width, dtype, writable, start_epoch.")
      .def_property_readonly("epochs", [](const Feed& f) { return f.info.epochs; })
      .def_property_readonly("rank", [](const Feed& f) { return f.info.rank; })
      .def_property_readonly("job", [](const Feed& f) { return f.info.job; })
      .def_property_readonly("closed", [](const Feed& f) { return !f.client.has_value(); })
      .def(
          "memory",
          [](Feed& f) {
            const auto m = f.open().memory();
            py::dict d;
            d["address"] = reinterpret_cast<std::uintptr_t>(m.data);
            d["bytes"] = m.bytes;
            d["writable"] = m.writable;
            return d;
          },
          "The feed's shared memory, where every batch lies: {address, bytes, writable}. Pin it "
          "once for asynchronous copies to the GPU: torch.cuda.cudart().cudaHostRegister("
          "address, bytes, 0) (flags 8, read-only, when not writable).")
      .def(
          "next", [](py::object self) { return make_batch(self, take_next(self.cast<Feed&>())); },
          "The next batch of this rank (an epoch's end may come as an empty batch with "
          "last_in_epoch). Raises conveyor.EndOfData after the last epoch, "
          "conveyor.TimeoutError after next_timeout.")
      .def("epoch", &epoch_of, py::arg("epoch"),
           "The non-empty batches of `epoch`, which must be the one this rank is in. Leaving the "
           "loop early keeps the rest of the epoch for the next call.")
      .def(
          "report",
          [](Feed& f) {
            auto& c = f.open();
            std::optional<conveyor::expected<conveyor::pipeline_report>> got;
            {
              py::gil_scoped_release nogil;
              got.emplace(c.report());
            }
            if (!*got) {
              raise_error(got->error());
            }
            return report_dict(**got);
          },
          "The node's figures: delivered, quarantined, filtered (left out by the recipe's "
          "filter, e.g. max_duration), duplicates, lost, steps_executed, "
          "retries, restarts, handoffs, hangs, finished, and sample_ms: one sample's work "
          "(its steps, without queueing) over the last ones prepared, {samples, p50, p90, "
          "p99, max} in ms (empty before the first).")
      .def("state_dict", &feed_state,
           "Where this rank stands: {\"conveyor_state\": bytes}, covering every batch next() "
           "or an epoch loop returned. Save it with the model's checkpoint; after a restart, "
           "attach(..., state=it) to a node with serve.resume = true goes on from there. From a "
           "node that signs states (serve.state_key_file) it comes signed: a round trip to the "
           "node, which raises as next() does when the node has gone.")
      .def("close", &close_feed,
           "Detaches (idempotent): the node keeps the batches not yet released for the next "
           "client of this rank and job.")
      .def("__repr__", [](const Feed& f) {
        return "<conveyor.Feed " + f.name() + " at " + f.socket + (f.client ? ">" : ", closed>");
      });
  with_block(feed, &close_feed);

  m.def("state_at_epoch", &state_at_epoch, py::arg("dataset_size"), py::arg("seed"),
        py::arg("shuffle"), py::arg("epochs"), py::arg("first_epoch"),
        "The resume state (bytes) of a run of `dataset_size` samples, seeded `seed`, over "
        "`epochs` epochs, that starts at `first_epoch`: attach(state=...) to a node with "
        "serve.resume = true begins there (conveyor.DataLoader.set_epoch before its first "
        "iteration).");
  m.def("python_draw_seed", &conveyor::python_draw_seed, py::arg("seed"), py::arg("epoch"),
        py::arg("index"),
        "The seed a Python Dataset's worker gives random, numpy.random and torch before "
        "dataset[index] in `epoch` of a run seeded `seed` (conveyor.DataLoader's draws).");
  m.def("attach", &attach, py::arg("socket"), py::arg("rank") = 0, py::arg("job") = 0,
        py::arg("timeout") = 0.0, py::arg("next_timeout") = 300.0, py::arg("state") = py::none(),
        py::arg("expected_uid") = py::none(),
        "Attaches to the Conveyor node listening on `socket` (str or os.PathLike) as rank `rank` "
        "of job `job`, waiting up to `timeout` seconds for the node to listen. Each next() waits "
        "up to `next_timeout` seconds. Raises conveyor.NotFound when no node listens, "
        "conveyor.Error for a rank or job the node does not serve. `state`: this rank's "
        "Feed.state_dict() from before a restart; a node with serve.resume = true starts once "
        "every rank has attached and goes on from their states (the attach waits for that). "
        "`expected_uid`: the user the node must run as (default: this process's user or "
        "root); a process of another user listening on the socket raises "
        "conveyor.PermissionError.");
}

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

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/batch_source.hpp"
#include "conveyor/batch.hpp"
#include "conveyor/client.hpp"
#include "conveyor/dtype.hpp"
#include "conveyor/error.hpp"
#include "core/batching/resume_state.hpp"
#include "core/python/draw_seed.hpp"

namespace py = pybind11;

namespace {

using steady = std::chrono::steady_clock;
constexpr std::chrono::milliseconds slice{100};  // the longest wait between signal checks

// --- exceptions ----------------------------------------------------------------------------

// The module's exception classes (new references kept for the life of the process: the module
// is never unloaded, and no destructor runs at interpreter exit).
struct exception_classes {
  PyObject* error = nullptr;         // conveyor.Error(RuntimeError)
  PyObject* end_of_data = nullptr;   // conveyor.EndOfData(Error)
  PyObject* timeout = nullptr;       // conveyor.TimeoutError(Error, TimeoutError)
  PyObject* disconnected = nullptr;  // conveyor.Disconnected(Error)
  PyObject* not_found = nullptr;     // conveyor.NotFound(Error): no node at the socket
  PyObject* permission = nullptr;    // conveyor.PermissionError(Error)
};
exception_classes classes;

PyObject* new_exception(py::module_& m, const char* name, py::handle bases, const char* doc) {
  const std::string qualified = std::string("conveyor.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) {
    throw py::error_already_set();
  }
  m.add_object(name, py::reinterpret_borrow<py::object>(cls));
  return cls;  // the new reference stays with `classes`
}

/// Raises `cls(message)` with `.code` set to `code` (an errc name).
[[noreturn]] void raise_as(PyObject* cls, const std::string& message, std::string_view code) {
  py::object exc = py::reinterpret_borrow<py::object>(cls)(message);
  exc.attr("code") = py::str(std::string(code));
  PyErr_SetObject(cls, exc.ptr());
  throw py::error_already_set();
}

/// The class an error of the feed raises. `attaching`: errc::not_found means "no node there",
/// not the end of the data.
PyObject* class_of(conveyor::errc code, bool attaching) {
  switch (code) {
    case conveyor::errc::not_found:
      return attaching ? classes.not_found : classes.end_of_data;
    case conveyor::errc::timed_out:
      return classes.timeout;
    case conveyor::errc::disconnected:
      return classes.disconnected;
    case conveyor::errc::permission_denied:
      return classes.permission;
    default:
      return classes.error;
  }
}

[[noreturn]] void raise_error(const conveyor::error& e, bool attaching = false) {
  raise_as(class_of(e.code(), attaching), e.message(), conveyor::to_string(e.code()));
}

/// A plain conveyor.Error of the module itself (a closed feed, a released batch).
[[noreturn]] void raise_usage(const std::string& message) {
  raise_as(classes.error, message, conveyor::to_string(conveyor::errc::invalid_argument));
}

void check_signals() {
  if (PyErr_CheckSignals() != 0) {
    throw py::error_already_set();
  }
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
}

/// Runs `f`, a call that may block (a send to the node, the CUDA driver, a drain of the
/// socket), without the GIL: a trainer that drives its GPUs from threads, a feed each, goes on
/// in its other threads meanwhile. The caller holds the GIL (every binding and every
/// destructor of a Python-owned object does).
template <class F>
void without_gil(F&& f) {
  py::gil_scoped_release nogil;
  f();
}

// --- Feed and Batch ------------------------------------------------------------------------

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

struct Batch {
  // Declared first, destroyed last: the batch goes back before the feed may close.
  py::object feed;  // the Feed: its client state (and so the shared memory) outlives the batch
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

  Batch(conveyor::batch b, py::object f) : feed(std::move(f)), batch(std::move(b)) {
    epoch = batch.epoch();
    index = batch.index();
    rank = batch.gpu();
    size = batch.size();
    ready_ns = batch.ready_ns();
    last_in_epoch = batch.last_in_epoch();
    writable = batch.writable();
    labels = batch.labels();
    sample_ids = batch.sample_ids();
    keys = batch.keys();
  }

  Batch(Batch&&) = default;
  Batch& operator=(Batch&&) = delete;
  /// A batch collected without release() is given back here.
  ~Batch() {
    if (!released) {
      release();
    }
  }

  void release() noexcept {
    without_gil([this] { batch.release(); });
    released = true;
  }
  /// Gives the batch back once the work queued on CUDA stream `stream` (an address, as torch's
  /// Stream.cuda_stream; 1: the legacy default stream) has completed.
  void release_after(std::uintptr_t stream) noexcept {
    without_gil(
        [this, stream] { batch.release_after(reinterpret_cast<conveyor::cuda_stream_t>(stream)); });
    released = true;
  }
};

/// The next batch of the feed, waiting at most its next_timeout in GIL-free slices that let
/// Ctrl-C through. Counts the epochs as their last batches pass.
conveyor::batch take_next(Feed& f) {
  auto& c = f.open();
  const auto deadline = steady::now() + to_ms(f.next_timeout_s);
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    const auto wait = std::clamp(left, std::chrono::milliseconds(1), slice);
    std::optional<conveyor::expected<conveyor::batch>> got;
    {
      py::gil_scoped_release nogil;
      got.emplace(c.next_for(wait));
    }
    if (*got) {
      conveyor::batch b = std::move(**got);
      if (b.last_in_epoch()) {
        f.current_epoch = b.epoch() + 1;
      }
      return b;
    }
    if (got->error().code() != conveyor::errc::timed_out) {
      raise_error(got->error());
    }
    check_signals();
    if (steady::now() >= deadline) {
      raise_as(classes.timeout,
               f.name() + ": no batch from the Conveyor node at " + f.socket + " within " +
                   py::str(py::float_(f.next_timeout_s)).cast<std::string>() + " s",
               conveyor::to_string(conveyor::errc::timed_out));
    }
  }
}

py::object make_batch(py::object feed_obj, conveyor::batch b) {
  return py::cast(Batch(std::move(b), std::move(feed_obj)));
}

/// The batches of one epoch of the feed: the non-empty ones, up to the epoch's last. Nothing
/// is released here: a batch goes back when its Batch is released or collected.
struct EpochIterator {
  py::object feed;
  std::uint64_t epoch = 0;
  bool done = false;

  py::object next() {
    Feed& f = feed.cast<Feed&>();
    while (!done) {
      if (f.current_epoch != epoch) {
        done = true;
        raise_usage(f.name() + " left epoch " + std::to_string(epoch) + " (it is in epoch " +
                    std::to_string(f.current_epoch) +
                    "): batches were taken with next() while the epoch was iterated");
      }
      conveyor::batch b = take_next(f);
      done = b.last_in_epoch();
      if (b.size() > 0) {
        return make_batch(feed, std::move(b));
      }
    }
    throw py::stop_iteration();
  }
};

/// Checks that `epoch` is the one the feed is in, as conveyor::epoch_range does.
void check_turn(const Feed& f, std::uint64_t epoch) {
  if (auto why = conveyor::out_of_turn(f.name(), epoch, f.current_epoch, f.info.epochs)) {
    raise_error(*why);
  }
}

py::dtype numpy_dtype(conveyor::dtype type) {
  switch (type) {
    case conveyor::dtype::uint8:
      return py::dtype::of<std::uint8_t>();
    case conveyor::dtype::float32:
      return py::dtype::of<float>();
    case conveyor::dtype::bfloat16:
      return py::dtype::of<std::uint16_t>();  // the bits; NumPy has no bfloat16
    case conveyor::dtype::int16:
      return py::dtype::of<std::int16_t>();
    case conveyor::dtype::int32:
      return py::dtype::of<std::int32_t>();
    case conveyor::dtype::int64:
      return py::dtype::of<std::int64_t>();
    case conveyor::dtype::float16:
      return py::dtype("float16");
    case conveyor::dtype::float64:
      return py::dtype::of<double>();
    case conveyor::dtype::int8:
      return py::dtype::of<std::int8_t>();
    case conveyor::dtype::bool_:
      return py::dtype::of<bool>();
  }
  return py::dtype::of<std::uint8_t>();
}

/// `b` unless it was released (its memory went back to the node).
Batch& held(py::object self, const std::string& what) {
  Batch& b = self.cast<Batch&>();
  if (b.released) {
    raise_usage("batch " + std::to_string(b.index) + " of epoch " + std::to_string(b.epoch) +
                " of rank " + std::to_string(b.rank) + " was released: its " + what +
                " went back to the node");
  }
  return b;
}

/// `v`'s values as an array of its batch shape over the shared memory; its base is the Batch.
py::array values_of(py::object self, const Batch& b, const conveyor::field_view& v) {
  if (v.device >= 0) {
    raise_usage("field '" + std::string(v.name) + "' lies in the memory of CUDA device " +
                std::to_string(v.device) + ", which NumPy cannot address");
  }
  const auto dt = numpy_dtype(v.type);
  std::vector<py::ssize_t> shape(v.shape.begin(), v.shape.begin() + v.rank);
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = dt.itemsize();
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  if (v.data == nullptr) {  // an empty batch: nothing to share
    return py::array(dt, shape, strides);
  }
  py::array arr(dt, shape, strides, v.data, self);
  if (!b.writable) {
    arr.attr("setflags")(py::arg("write") = false);
  }
  return arr;
}

/// Field `name` of the batch, or a KeyError naming the fields it has.
conveyor::field_view field_of(const Batch& b, const std::string& name) {
  if (auto v = b.batch.field(name)) {
    return *v;
  }
  std::string names;
  for (const auto& f : b.batch.fields()) {
    names += (names.empty() ? "'" : ", '") + std::string(f.name) + "'";
  }
  throw py::key_error("the batch has no field '" + name + "' (its fields: " + names + ")");
}

/// The batch tensor as an N x C x H x W array over the shared memory; its base is the Batch.
py::array images_of(py::object self) {
  Batch& b = held(self, "images");
  auto image = b.batch.field("image");
  if (!image || image->rank != 4) {
    raise_usage("the batch has no N x C x H x W \"image\" field (b.fields lists its fields)");
  }
  return values_of(self, b, *image);
}

/// Field `name`'s values over the shared memory (b["features"]).
py::array field_values(py::object self, const std::string& name) {
  Batch& b = held(self, "fields");
  return values_of(self, b, field_of(b, name));
}

/// A padded field's lengths: int32 [samples] for one padded axis, [samples, axes] for more.
py::array lengths_of(py::object self, const std::string& name) {
  Batch& b = held(self, "fields");
  auto v = field_of(b, name);
  if (v.mode != conveyor::collate::pad) {
    raise_usage("field '" + name + "' is not padded: it has no lengths");
  }
  const auto n = static_cast<py::ssize_t>(v.samples);
  std::vector<py::ssize_t> shape{n};
  if (v.length_axes != 1) {
    shape.push_back(v.length_axes);
  }
  py::array_t<std::int32_t> out(shape);
  if (n > 0 && v.length_axes > 0) {
    std::memcpy(out.mutable_data(), v.lengths, sizeof(std::int32_t) * n * v.length_axes);
  }
  return out;
}

/// A ragged field's offsets: int64 [samples + 1].
py::array offsets_of(py::object self, const std::string& name) {
  Batch& b = held(self, "fields");
  auto v = field_of(b, name);
  if (v.mode != conveyor::collate::ragged) {
    raise_usage("field '" + name + "' is not ragged: it has no offsets");
  }
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(v.samples + 1));
  if (v.offsets != nullptr) {
    std::memcpy(out.mutable_data(), v.offsets, sizeof(std::int64_t) * (v.samples + 1));
  } else {
    out.mutable_at(0) = 0;
  }
  return out;
}

/// A byte-string field (a transcript) as one bytes object per sample (copies).
py::list strings_of(py::object self, const std::string& name) {
  Batch& b = held(self, "fields");
  auto v = field_of(b, name);
  if (!v.bytes) {
    raise_usage("field '" + name + "' holds arrays, not byte strings");
  }
  py::list out;
  const auto* at = static_cast<const char*>(v.data);
  for (std::size_t i = 0; i < v.samples; ++i) {
    if (v.mode == conveyor::collate::ragged) {
      out.append(
          py::bytes(at + v.offsets[i], static_cast<std::size_t>(v.offsets[i + 1] - v.offsets[i])));
    } else {
      const auto row = static_cast<std::size_t>(v.shape[1]);
      const auto length =
          v.mode == conveyor::collate::pad ? static_cast<std::size_t>(v.lengths[i]) : row;
      out.append(py::bytes(at + i * row, length));
    }
  }
  return out;
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

py::dict report_dict(const conveyor::pipeline_report& r) {
  py::dict d;
  d["delivered"] = r.delivered;
  d["quarantined"] = r.quarantined;
  d["filtered"] = r.filtered;
  d["duplicates"] = r.duplicates;
  d["lost"] = r.lost;
  d["steps_executed"] = r.steps_executed;
  d["retries"] = r.retries;
  d["restarts"] = r.restarts;
  d["handoffs"] = r.handoffs;
  d["hangs"] = r.hangs;
  d["finished"] = r.finished;
  py::dict sample_ms;
  for (const auto& [name, ms] : r.sample_ms) {
    sample_ms[py::str(name)] = ms;
  }
  d["sample_ms"] = sample_ms;
  return d;
}

constexpr const char* state_key = "conveyor_state";

/// A rank's state as PyTorch's state_dict convention has it: {"conveyor_state": bytes}.
py::dict state_dict(Feed& f) {
  auto& c = f.open();
  std::optional<conveyor::expected<conveyor::run_state>> state;
  {
    py::gil_scoped_release nogil;  // a node that signs states answers in turn with the batches
    state.emplace(c.state());
  }
  if (!*state) {
    raise_error(state->error());
  }
  const auto& bytes = (*state)->bytes;
  py::dict d;
  d[state_key] = py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return d;
}

/// The bytes of a state given to attach(state=...): a state_dict() or its bytes; None: none.
conveyor::run_state state_from(const py::object& state) {
  conveyor::run_state out;
  if (state.is_none()) {
    return out;
  }
  py::object bytes = state;
  if (py::isinstance<py::dict>(state)) {
    auto d = state.cast<py::dict>();
    if (!d.contains(state_key)) {
      raise_usage(
          "conveyor.attach: state has no \"conveyor_state\" key (pass what "
          "Feed.state_dict() returned)");
    }
    bytes = d[state_key];
  }
  if (!py::isinstance<py::bytes>(bytes)) {
    raise_usage("conveyor.attach: state must be a Feed.state_dict() or its bytes");
  }
  auto text = bytes.cast<std::string>();
  out.bytes.assign(text.begin(), text.end());
  if (out.bytes.empty()) {
    raise_usage("conveyor.attach: state is empty (not a Feed.state_dict())");
  }
  return out;
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
  state.shuffle = shuffle;
  state.epochs = epochs;
  state.first_epoch = first_epoch;
  const auto bytes = conveyor::encode(state);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

/// Attaches, retrying in short slices while no node listens yet so that Ctrl-C gets through.
Feed attach(const py::object& socket, int rank, int job, double timeout, double next_timeout,
            const py::object& state, const py::object& expected_uid) {
  if (!(timeout >= 0) || !(next_timeout > 0)) {
    raise_as(classes.error, "conveyor.attach: timeout must be >= 0 and next_timeout > 0",
             conveyor::to_string(conveyor::errc::invalid_argument));
  }
  auto resume = state_from(state);
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

  classes.error = new_exception(m, "Error", PyExc_RuntimeError,
                                "A Conveyor error: the node's message; .code is the error's "
                                "name (e.g. 'invalid_argument').");
  py::handle base(classes.error);
  classes.end_of_data =
      new_exception(m, "EndOfData", base, "Every epoch has been handed out: no more batches.");
  classes.timeout =
      new_exception(m, "TimeoutError", py::make_tuple(base, py::handle(PyExc_TimeoutError)),
                    "No batch (or answer) came from the node within the time allowed.");
  classes.disconnected =
      new_exception(m, "Disconnected", base, "The node has gone (it exited or failed).");
  classes.not_found = new_exception(m, "NotFound", base, "No Conveyor node listens on the socket.");
  classes.permission = new_exception(m, "PermissionError", base,
                                     "The node's socket does not admit this user (serve.mode).");

  py::class_<Batch>(m, "Batch",
                    "One batch of one rank. Its images lie in the node's shared memory until the "
                    "batch is released (release(), the end of a with block, or the collection of "
                    "the Batch and of every array made from it).")
      .def_property_readonly("images", &images_of,
                             "The \"image\" field: N x C x H x W array over the shared memory "
                             "(no copy; its base keeps the batch). Read-only unless the node's "
                             "batches are writable. bfloat16 batches come as uint16 (the same "
                             "bits).")
      .def("__getitem__", &field_values, py::arg("name"),
           "Field `name`'s values over the shared memory (no copy): stacked N x shape; padded "
           "to the batch's largest extents (lengths(name) says each sample's); ragged, the "
           "samples' rows one after another (offsets(name) says where each starts).")
      .def("__contains__",
           [](const Batch& b, const std::string& name) { return b.batch.field(name).has_value(); })
      .def_property_readonly(
          "fields",
          [](const Batch& b) {
            std::vector<std::string> names;
            for (const auto& f : b.batch.fields()) {
              names.emplace_back(f.name);
            }
            return names;
          },
          "the names of the batch's fields, in the order the topology's steps made them")
      .def("lengths", &lengths_of, py::arg("name"),
           "A padded field's own extents per sample: int32 [N] (or [N, axes] for several "
           "padded axes), a copy.")
      .def("offsets", &offsets_of, py::arg("name"),
           "A ragged field's row offsets: int64 [N + 1], sample i at rows offsets[i] .. "
           "offsets[i + 1] (a copy).")
      .def("strings", &strings_of, py::arg("name"),
           "A byte-string field (a transcript) as a list of bytes, one per sample (copies).")
      .def_property_readonly(
          "labels",
          [](const Batch& b) {
            return py::array_t<std::int32_t>(py::ssize_t(b.labels.size()), b.labels.data());
          },
          "int32 label per sample (a copy)")
      .def_property_readonly(
          "sample_ids",
          [](const Batch& b) {
            return py::array_t<std::uint64_t>(py::ssize_t(b.sample_ids.size()),
                                              b.sample_ids.data());
          },
          "uint64 dataset index per sample (a copy)")
      .def_property_readonly(
          "keys", [](const Batch& b) { return b.keys; }, "each sample's file, or shard and record")
      .def_property_readonly("epoch", [](const Batch& b) { return b.epoch; })
      .def_property_readonly(
          "index", [](const Batch& b) { return b.index; },
          "the batch's number within its epoch, for its rank")
      .def_property_readonly("rank", [](const Batch& b) { return b.rank; })
      .def_property_readonly("last_in_epoch", [](const Batch& b) { return b.last_in_epoch; })
      .def_property_readonly("size", [](const Batch& b) { return b.size; })
      .def_property_readonly(
          "ready_ns", [](const Batch& b) { return b.ready_ns; },
          "when the node published the batch, CLOCK_MONOTONIC ns")
      .def_property_readonly("writable", [](const Batch& b) { return b.writable; })
      .def_property_readonly("released", [](const Batch& b) { return b.released; })
      .def("__len__", [](const Batch& b) { return b.size; })
      .def(
          "release",
          [](Batch& b, std::optional<std::uintptr_t> stream) {
            if (stream && *stream != 0) {
              b.release_after(*stream);
            } else {
              b.release();
            }
          },
          py::arg("stream") = py::none(),
          "Gives the batch's slot back to the node (idempotent): now, or with `stream` (a CUDA "
          "stream's address, torch.cuda.Stream.cuda_stream) once the work queued there so far "
          "has completed (an asynchronous copy from the pinned feed memory). Arrays made from "
          "it must not be used afterwards: the node writes the next batch there.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](Batch& b, const py::args&) {
             b.release();
             return false;
           })
      .def("__repr__", [](const Batch& b) {
        return "<conveyor.Batch rank " + std::to_string(b.rank) + " epoch " +
               std::to_string(b.epoch) + " index " + std::to_string(b.index) + ", " +
               std::to_string(b.size) + " samples" + (b.released ? ", released>" : ">");
      });

  py::class_<EpochIterator>(m, "EpochIterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &EpochIterator::next);

  py::class_<Feed>(m, "Feed", "A rank's feed of batches from a Conveyor node (conveyor.attach).")
      .def(
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
      .def(
          "epoch",
          [](py::object self, std::uint64_t epoch) {
            Feed& f = self.cast<Feed&>();
            f.open();
            check_turn(f, epoch);
            return EpochIterator{std::move(self), epoch, false};
          },
          py::arg("epoch"),
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
      .def("state_dict", &state_dict,
           "Where this rank stands: {\"conveyor_state\": bytes}, covering every batch next() "
           "or an epoch loop returned. Save it with the model's checkpoint; after a restart, "
           "attach(..., state=it) to a node with serve.resume = true goes on from there. From a "
           "node that signs states (serve.state_key_file) it comes signed: a round trip to the "
           "node, which raises as next() does when the node has gone.")
      .def("close", &close_feed,
           "Detaches (idempotent): the node keeps the batches not yet released for the next "
           "client of this rank and job.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](Feed& f, const py::args&) {
             close_feed(f);
             return false;
           })
      .def("__repr__", [](const Feed& f) {
        return "<conveyor.Feed " + f.name() + " at " + f.socket + (f.client ? ">" : ", closed>");
      });

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

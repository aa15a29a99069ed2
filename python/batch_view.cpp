#include "python/batch_view.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <utility>

#include "conveyor/dtype.hpp"
#include "python/context_manager.hpp"
#include "python/module_errors.hpp"

namespace conveyor_python {

Batch::Batch(conveyor::batch b, py::object owner_object)
    : owner(std::move(owner_object)), batch(std::move(b)) {
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

Batch::~Batch() {
  if (!released) {
    release();
  }
}

void Batch::release() noexcept {
  without_gil([this] { batch.release(); });
  released = true;
}

void Batch::release_after(std::uintptr_t stream) noexcept {
  without_gil(
      [this, stream] { batch.release_after(reinterpret_cast<conveyor::cuda_stream_t>(stream)); });
  released = true;
}

py::object make_batch(py::object owner, conveyor::batch b) {
  return py::cast(Batch(std::move(b), std::move(owner)));
}

namespace {

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

/// `b` unless it was released (its memory went back to be filled again).
Batch& held(py::object self, const std::string& what) {
  Batch& b = self.cast<Batch&>();
  if (b.released) {
    raise_usage("batch " + std::to_string(b.index) + " of epoch " + std::to_string(b.epoch) +
                " of rank " + std::to_string(b.rank) + " was released: its " + what +
                " went back to be filled again");
  }
  return b;
}

/// `v`'s values as an array of its batch shape over the batch's memory; its base is the Batch.
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

/// The batch tensor as an N x C x H x W array over the batch's memory; its base is the Batch.
py::array images_of(py::object self) {
  Batch& b = held(self, "images");
  auto image = b.batch.field("image");
  if (!image || image->rank != 4) {
    raise_usage("the batch has no N x C x H x W \"image\" field (b.fields lists its fields)");
  }
  return values_of(self, b, *image);
}

/// Field `name`'s values over the batch's memory (b["features"]).
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

}  // namespace

void bind_batch(py::module_& m) {
  py::class_<Batch> cls(
      m, "Batch",
      "One batch of one rank (GPU). Its fields lie in the node's shared memory (a "
      "feed's batch) or the pipeline's buffers (a Pipeline's batch) until the batch "
      "is released (release(), the end of a with block, or the collection of "
      "the Batch and of every array made from it).");
  cls.def_property_readonly("images", &images_of,
                            "The \"image\" field: N x C x H x W array over the batch's memory "
                            "(no copy; its base keeps the batch). Read-only unless the "
                            "batches are writable. bfloat16 batches come as uint16 (the same "
                            "bits).")
      .def("__getitem__", &field_values, py::arg("name"),
           "Field `name`'s values over the batch's memory (no copy): stacked N x shape; padded "
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
      .def_readonly("keys", &Batch::keys, "each sample's file, or shard and record")
      .def_readonly("epoch", &Batch::epoch)
      .def_readonly("index", &Batch::index, "the batch's number within its epoch, for its rank")
      .def_readonly("rank", &Batch::rank)
      .def_readonly("last_in_epoch", &Batch::last_in_epoch)
      .def_readonly("size", &Batch::size)
      .def_readonly("ready_ns", &Batch::ready_ns,
                    "when the batch was published, CLOCK_MONOTONIC ns")
      .def_readonly("writable", &Batch::writable)
      .def_readonly("released", &Batch::released)
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
          "Gives the batch's slot back to the node or pipeline (idempotent): now, or with `stream` "
          "(a CUDA "
          "stream's address, torch.cuda.Stream.cuda_stream) once the work queued there so far "
          "has completed (an asynchronous copy from the pinned feed memory). Arrays made from "
          "it must not be used afterwards: the next batch is written there.")
      .def("__repr__", [](const Batch& b) {
        return "<conveyor.Batch rank " + std::to_string(b.rank) + " epoch " +
               std::to_string(b.epoch) + " index " + std::to_string(b.index) + ", " +
               std::to_string(b.size) + " samples" + (b.released ? ", released>" : ">");
      });
  with_block(cls, [](Batch& b) { b.release(); });
}

}  // namespace conveyor_python

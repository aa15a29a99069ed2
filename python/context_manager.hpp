#pragma once
// A `with` block for a class of either module (a batch, a feed, a pipeline): `with x as y`
// gives x itself, and leaving the block calls `exit` on it (release, close) and lets any
// exception through.

#include <pybind11/pybind11.h>

namespace conveyor_python {

namespace py = pybind11;

/// Adds __enter__ and __exit__ to `cls`; `exit(T&)` runs on the way out.
template <class T, class Exit>
py::class_<T>& with_block(py::class_<T>& cls, Exit exit) {
  cls.def("__enter__", [](py::object self) { return self; });
  cls.def("__exit__", [exit](T& t, const py::args&) {
    exit(t);
    return false;
  });
  return cls;
}

}  // namespace conveyor_python

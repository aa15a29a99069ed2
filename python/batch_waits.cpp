#include "python/batch_waits.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "api/batch_source.hpp"
#include "python/batch_view.hpp"
#include "python/module_errors.hpp"

namespace conveyor_python {

using steady = std::chrono::steady_clock;

conveyor::expected<conveyor::batch> take_in_slices(const timed_take& take, double timeout_s) {
  const auto deadline = steady::now() + to_ms(timeout_s);
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    const auto wait = std::clamp(left, std::chrono::milliseconds(1), slice);
    std::optional<conveyor::expected<conveyor::batch>> got;
    {
      py::gil_scoped_release nogil;
      got.emplace(take(wait));
    }
    if (*got || got->error().code() != conveyor::errc::timed_out || steady::now() >= deadline) {
      return std::move(*got);
    }
    check_signals();
  }
}

void check_turn(const std::string& name, std::uint64_t epoch, std::uint64_t ended,
                std::uint64_t epochs) {
  if (auto why = conveyor::out_of_turn(name, epoch, ended, epochs)) {
    raise_error(*why);
  }
}

py::object EpochIterator::next() {
  while (!done) {
    if (const auto now = ended(); now != epoch) {
      done = true;
      raise_usage(name + " left epoch " + std::to_string(epoch) + " (it is in epoch " +
                  std::to_string(now) +
                  "): batches were taken with next() while the epoch was iterated");
    }
    conveyor::batch b = take();
    done = b.last_in_epoch();
    if (b.size() > 0) {
      return make_batch(owner, std::move(b));
    }
  }
  throw py::stop_iteration();
}

void bind_epoch_iterator(py::module_& m) {
  py::class_<EpochIterator>(m, "EpochIterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &EpochIterator::next);
}

}  // namespace conveyor_python

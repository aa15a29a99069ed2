#include "core/python/python_transform.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include <opencv2/core.hpp>

#include "core/base/quoted_string.hpp"
#include "core/python/child_process.hpp"
#include "core/python/worker_step.hpp"
#include "core/transforms/field_bindings.hpp"

namespace conveyor {
namespace {

constexpr std::uint64_t field_alignment = 64;
/// An extent a worker may answer with: past it, the product's check against the region could
/// overflow nothing but the shape could not be held.
constexpr std::uint64_t max_extent = std::uint64_t{1} << 40;

std::optional<worker_dtype> wire_dtype(dtype t) {
  for (std::uint8_t i = 0; size_of(static_cast<worker_dtype>(i)) != 0; ++i) {
    if (std::string_view(name_of(static_cast<worker_dtype>(i))) == name_of(t)) {
      return static_cast<worker_dtype>(i);
    }
  }
  return std::nullopt;
}

std::string json_list(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i ? ", " : "") + quoted_string(names[i]);
  }
  return out + "]";
}

expected<void> write_at(int fd, const std::uint8_t* bytes, std::size_t size, std::uint64_t at) {
  while (size > 0) {
    const auto n = ::pwrite(fd, bytes, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return error{errc::io_error, std::string("writing a Python step's fields: ") +
                                       std::strerror(n < 0 ? errno : EIO)};
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
    at += static_cast<std::uint64_t>(n);
  }
  return {};
}

/// Where a field's bytes go, and how many.
worker_field table_entry(const field_binding& b, const field_value& v, std::uint64_t at) {
  worker_field f;
  f.kind = leaf_kind::ndarray;
  f.name = b.name;
  f.offset = at;
  if (v.is_image()) {
    f.dtype = worker_dtype::uint8;
    f.shape = {static_cast<std::uint64_t>(v.image.rows), static_cast<std::uint64_t>(v.image.cols),
               static_cast<std::uint64_t>(v.image.channels())};
    f.bytes = f.shape[0] * f.shape[1] * f.shape[2];
    return f;
  }
  f.dtype = *wire_dtype(v.array.type);  // bfloat16 is refused when the chain is built
  for (int i = 0; i < v.array.rank; ++i) {
    f.shape.push_back(static_cast<std::uint64_t>(v.array.extent(i)));
  }
  f.bytes = v.array.byte_count();
  return f;
}

expected<void> write_field(int fd, const field_value& v, const worker_field& f) {
  if (!v.is_image()) {
    return write_at(fd, v.array.bytes.data(), v.array.bytes.size(), f.offset);
  }
  const auto row = static_cast<std::size_t>(v.image.cols) * v.image.elemSize();
  if (v.image.isContinuous()) {
    return write_at(fd, v.image.ptr<std::uint8_t>(), row * v.image.rows, f.offset);
  }
  for (int y = 0; y < v.image.rows; ++y) {  // a crop's view into a larger image
    if (auto ok = write_at(fd, v.image.ptr<std::uint8_t>(y), row, f.offset + row * y); !ok) {
      return ok;
    }
  }
  return {};
}

/// The table of the fields `reads` of `sample`, their bytes written into `worker`'s inbox.
expected<std::vector<worker_field>> fields_for_worker(const sample_state& sample,
                                                      const std::vector<field_binding>& reads,
                                                      worker_process& worker) {
  std::vector<worker_field> table;
  std::uint64_t size = 0;
  for (const auto& b : reads) {
    if (!sample.fields[b.index].present) {
      return error{errc::transform_error, "field '" + b.name + "' is missing from the sample"};
    }
    table.push_back(table_entry(b, sample.fields[b.index], size));
    size += (table.back().bytes + field_alignment - 1) / field_alignment * field_alignment;
  }
  if (size == 0) {
    return table;
  }
  auto inbox = worker.inbox(size);
  if (!inbox) {
    return inbox.error();
  }
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (auto ok = write_field(*inbox, sample.fields[reads[i].index], table[i]); !ok) {
      return ok.error();
    }
  }
  return table;
}

/// A field as the worker answered it, checked against the field `b` the step makes and read
/// out of the worker's region.
expected<field_value> made_value(const field_binding& b, const worker_field& f,
                                 const worker_sample& got) {
  if (f.name != b.name) {
    return error{errc::transform_error,
                 "answered field '" + f.name + "' where '" + b.name + "' was due"};
  }
  const auto t = dtype_named(name_of(f.dtype));
  array_shape shape;
  shape.rank = static_cast<int>(f.shape.size());
  bool extents_ok = f.shape.size() <= static_cast<std::size_t>(host_array::max_rank);
  for (std::size_t i = 0; extents_ok && i < f.shape.size(); ++i) {
    extents_ok = f.shape[i] < max_extent;
    shape.extents[i] = static_cast<std::int64_t>(f.shape[i]);
  }
  const bool array = f.kind == leaf_kind::tensor || f.kind == leaf_kind::ndarray ||
                     f.kind == leaf_kind::int_ || f.kind == leaf_kind::float_ ||
                     f.kind == leaf_kind::bool_;
  if (!array || !t || !extents_ok || !fits(b.type, *t, shape)) {
    return error{errc::transform_error,
                 "field '" + b.name + "' is " + (array ? "" : "no array but ") + name_of(f.dtype) +
                     " " + shape_text(f.shape) + ", declared " + describe(b.type)};
  }
  field_value v;
  std::uint8_t* out = nullptr;
  if (b.image) {
    v.set(cv::Mat(static_cast<int>(f.shape[0]), static_cast<int>(f.shape[1]),
                  CV_8UC(static_cast<int>(f.shape[2]))));
    out = v.image.ptr<std::uint8_t>();
  } else {
    v.set(host_array::uninitialized(*t, shape.extents.begin(), shape.extents.begin() + shape.rank));
    out = v.array.bytes.data();
  }
  if (auto read = got.copy(f, out); !read) {
    return error{errc::io_error, "field '" + b.name + "': " + read.error().message()};
  }
  return v;
}

class python_transform_step final : public worker_step {
 public:
  python_transform_step(std::shared_ptr<worker_pool> pool, std::chrono::milliseconds hang_timeout,
                        std::uint32_t step, std::string where, std::vector<field_binding> reads,
                        std::vector<field_binding> makes)
      : worker_step(std::move(pool), hang_timeout),
        step_(step),
        where_(std::move(where)),
        reads_(std::move(reads)),
        makes_(std::move(makes)) {}

  std::string_view name() const noexcept override { return "python"; }

 private:
  expected<void> ask(worker_process& worker, const sample_state& sample,
                     std::uint64_t seed) const override {
    auto table = fields_for_worker(sample, reads_, worker);
    if (!table) {
      return named(sample, table.error());
    }
    const auto message = apply_message(step_, sample.epoch_seed, sample.sample_id, seed, *table);
    return worker.ask_step(message, table->empty() ? -1 : *worker.inbox(0));
  }

  expected<void> write_fields(sample_state& sample, const worker_sample& got) const override {
    if (got.fields.size() != makes_.size()) {
      return named(sample, error{errc::transform_error,
                                 "answered " + std::to_string(got.fields.size()) +
                                     " fields, where it makes " + std::to_string(makes_.size())});
    }
    std::vector<field_value> made;
    for (std::size_t i = 0; i < makes_.size(); ++i) {
      auto v = made_value(makes_[i], got.fields[i], got);
      if (!v) {
        return named(sample, v.error());
      }
      made.push_back(std::move(*v));
    }
    for (std::size_t i = 0; i < makes_.size(); ++i) {
      sample.fields[makes_[i].index] = std::move(made[i]);
    }
    return {};
  }

  /// "<key>: transform[2] (python m:f): <what>".
  error named(const sample_state& sample, const error& e) const {
    return error{e.code(), sample.key + ": " + where_ + ": " + e.message()};
  }

  std::uint32_t step_;
  std::string where_;
  std::vector<field_binding> reads_;
  std::vector<field_binding> makes_;
};

}  // namespace

std::string python_steps_setup(const std::vector<const python_transform_spec*>& steps) {
  std::string out = "{\"steps\": [";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out += std::string(i ? ", " : "") + "{\"where\": " + quoted_string(steps[i]->where) +
           ", \"function\": " + quoted_string(steps[i]->function) +
           ", \"reads\": " + json_list(steps[i]->reads) +
           ", \"makes\": " + json_list(steps[i]->makes) + "}";
  }
  return out + "]}";
}

expected<void> bind_python_steps(std::vector<transform_spec>& specs,
                                 const python_steps_launch& how) {
  std::vector<python_transform_spec*> steps;
  for (auto& s : specs) {
    if (auto* p = std::get_if<python_transform_spec>(&s)) {
      steps.push_back(p);
    }
  }
  if (steps.empty()) {
    return {};
  }
  const auto setup = python_steps_setup({steps.begin(), steps.end()});
  worker_launch launch;
  launch.python = how.interpreter;
  launch.setup = std::make_shared<std::vector<std::uint8_t>>(setup.begin(), setup.end());
  launch.start_timeout = how.start_timeout;
  auto pool = worker_pool::make(std::move(launch), how.workers);
  if (auto started = pool->start_all(); !started) {
    return error{errc::invalid_config, "the Python steps' workers (" + how.interpreter +
                                           " importing conveyor.conveyor_worker) did not start: " +
                                           started.error().message()};
  }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    steps[k]->bind = [pool, k, where = steps[k]->where, hang = how.hang_timeout](
                         const std::vector<field_binding>& reads,
                         const std::vector<field_binding>& makes) -> expected<step_ptr> {
      return step_ptr(std::make_unique<python_transform_step>(
          pool, hang, static_cast<std::uint32_t>(k), where, reads, makes));
    };
  }
  return {};
}

}  // namespace conveyor

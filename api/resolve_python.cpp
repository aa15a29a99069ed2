#include "api/resolve_python.hpp"

#include <fstream>
#include <optional>

#include "api/resolve_topology.hpp"
#include "core/base/log.hpp"
#include "core/base/quoted_string.hpp"
#include "core/base/regular_file.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/python/child_process.hpp"
#include "core/python/draw_seed.hpp"
#include "core/python/python_dataset.hpp"
#include "core/python/python_step.hpp"
#include "core/python/python_transform.hpp"
#include "core/python/sampler_order.hpp"

namespace conveyor {
namespace {

error bad(const topology& t, const std::string& key, const std::string& why) {
  return error{errc::invalid_config, t.source + ": " + key + ": " + why};
}

std::chrono::milliseconds seconds_of(double s) {
  return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(s));
}

// The setup stays in its file, read when a zygote is spawned (worker_launch::setup_file): at
// once when the node spawns its own, only if it dies when the trainer forked it.
expected<worker_launch> launch_of(const topology& t) {
  if (auto file = identify_file(t.dataset.path); !file) {
    return bad(t, "dataset.path", file.error().message());
  } else if (file->size == 0) {
    return bad(t, "dataset.path", t.dataset.path + " is empty (no pickled dataset)");
  }
  worker_launch launch;
  launch.python = t.python.interpreter;
  launch.script = t.python.worker;
  launch.setup_file = t.dataset.path;
  launch.start_timeout = seconds_of(t.python.start_timeout_s);
  return launch;
}

// {"structure": ..., "fields": [{"name": ..., "kind": k, "type": "float32 [2, 3]"}, ...]}
std::string layout_json(const python_sample_layout& layout) {
  std::string out = "{\"structure\": " + layout.structure + ", \"fields\": [";
  for (std::size_t i = 0; i < layout.fields.size(); ++i) {
    const auto& f = layout.fields[i];
    out += std::string(i ? ", " : "") + "{\"name\": " + quoted_string(f.name) +
           ", \"kind\": " + std::to_string(static_cast<int>(layout.leaf_kinds[i])) +
           ", \"dtype\": " + quoted_string(std::string(name_of(f.type.type))) + "}";
  }
  return out + "]}\n";
}

expected<void> write_layout(const topology& t, const python_sample_layout& layout) {
  if (t.python.layout_file.empty()) {
    return {};
  }
  std::ofstream out(t.python.layout_file, std::ios::trunc);
  out << layout_json(layout);
  if (!out.flush()) {
    return bad(t, "python.layout_file", "cannot write " + t.python.layout_file);
  }
  return {};
}

// The zygote the node's starter forked and left to it (python.zygote_socket and _pidfd), or
// null when the node is to spawn its own.
expected<std::shared_ptr<worker_zygote>> inherited_zygote(const topology& t,
                                                          const worker_launch& launch) {
  if (t.python.zygote_socket < 0) {
    return std::shared_ptr<worker_zygote>();
  }
  auto socket = adopt_descriptor(t.python.zygote_socket, "python.zygote_socket");
  auto pidfd = adopt_descriptor(t.python.zygote_pidfd, "python.zygote_pidfd");
  if (!socket || !pidfd) {
    return bad(t, "python", (!socket ? socket.error() : pidfd.error()).message());
  }
  auto z = worker_zygote::adopt(launch, std::move(*socket), std::move(*pidfd));
  if (!z && z.error().code() == errc::invalid_config) {
    return bad(t, "python", z.error().message());
  }
  return z;
}

// A sample of epoch 0 (its id) and the dataset index it stands for (the trainer's sampler's
// order gives it where python.order_file is set).
struct epoch_sample {
  std::uint64_t id = 0;
  std::uint64_t index = 0;
};

// Samples the layout may be taken from before the first sample that raised is named.
constexpr std::size_t probe_tries = 8;

// The order python.order_file gives, checked; empty where it is not set.
expected<std::vector<std::uint64_t>> python_order(const topology& t) {
  if (t.python.order_file.empty()) {
    return std::vector<std::uint64_t>{};
  }
  auto order = read_sampler_order(t.python.order_file, t.python.length);
  if (!order) {
    return bad(t, "python.order_file", order.error().message());
  }
  return order;
}

// The first probe_tries samples of epoch 0, in its order.
expected<std::vector<epoch_sample>> first_samples(const topology& t) {
  std::vector<epoch_sample> out;
  if (!t.python.order_file.empty()) {  // shuffle is false: positions 0, 1, ...
    auto order = python_order(t);
    if (!order) {
      return order.error();
    }
    for (std::size_t j = 0; j < order->size() && j < probe_tries; ++j) {
      out.push_back({j, (*order)[j]});
    }
    return out;
  }
  const auto order =
      epoch_order(t.python.length, t.dataset.seed, 0, sample_order{t.dataset.shuffle, 0, 0});
  for (std::size_t j = 0; j < order.size() && j < probe_tries; ++j) {
    out.push_back({order[j], order[j]});
  }
  return out;
}

// The layout of the first of those samples that does not raise: one that raises is
// quarantined in its turn, as any; where each raises (a bug in __getitem__), the first's error.
expected<python_sample_layout> probe_layout(const topology& t, worker_pool& pool,
                                            const std::vector<epoch_sample>& samples) {
  std::optional<error> first_error;
  for (const auto& s : samples) {
    auto layout = probe_python_dataset(pool, s.index, python_draw_seed(t.dataset.seed, 0, s.id),
                                       seconds_of(t.python.hang_timeout_s));
    if (layout || layout.error().code() != errc::transform_error) {
      return layout;  // a layout, or a worker that cannot run samples at all
    }
    if (!first_error) {
      first_error = layout.error();
    }
  }
  if (!first_error) {
    return error{errc::invalid_argument, "no sample to take the layout from"};
  }
  return *first_error;
}

const field_spec* find_field(const python_sample_layout& layout, const std::string& name) {
  for (const auto& f : layout.fields) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

}  // namespace

expected<std::shared_ptr<const sample_source>> open_python_dataset(const topology& t) {
  auto order = python_order(t);
  if (!order) {
    return order.error();
  }
  return std::shared_ptr<const sample_source>(
      std::make_shared<python_dataset>(t.python.length, std::move(*order)));
}

expected<python_chain> resolve_python_chain(const topology& t) {
  auto launch = launch_of(t);
  if (!launch) {
    return launch.error();
  }
  auto inherited = inherited_zygote(t, *launch);
  if (!inherited) {
    return inherited.error();
  }
  const auto counts = spawned_counts(t.pipeline);  // the most autotune may use
  auto pool = worker_pool::make(std::move(*launch),
                                static_cast<std::size_t>(counts.preprocessors + counts.stragglers),
                                std::move(*inherited));
  // The first sample of epoch 0 (its draws as that epoch gives them): its worker stays warm.
  auto samples = first_samples(t);
  if (!samples) {
    return samples.error();
  }
  auto layout = probe_layout(t, *pool, *samples);
  if (!layout) {
    return bad(t, "dataset.path", "the first sample: " + layout.error().message());
  }
  for (std::size_t i = 0; i < layout->fields.size(); ++i) {
    auto& f = layout->fields[i];
    if (f.type.kind == field_kind::bytes) {
      f.collate.mode = collate_mode::ragged;
      f.collate.max_values = static_cast<std::int64_t>(
          python_text_room(t.python.max_text_bytes, layout->first_bytes[i]));
    }
  }
  if (auto written = write_layout(t, *layout); !written) {
    return written.error();
  }
  // Every worker now, all at once: one started while samples wait holds them for seconds.
  if (auto started = pool->start_all(); !started) {
    return bad(t, "dataset.path", started.error().message());
  }
  log("node")->info("Python dataset: {} workers at most; its samples have {}", pool->live(),
                    layout->structure.substr(0, 200));
  auto chain = transform_chain::build(
      {python_step_spec(pool, *layout, seconds_of(t.python.hang_timeout_s))});
  if (!chain) {
    return bad(t, "dataset.path", chain.error().message());
  }
  python_chain out{*chain, chain->schema()};
  for (auto& f : out.schema.fields) {
    if (const auto* leaf = find_field(*layout, f.name)) {
      f.collate = leaf->collate;
    }
  }
  return out;
}

expected<void> bind_topology_python_steps(const topology& t, std::vector<transform_spec>& specs) {
  const auto counts = resolve_counts(t.pipeline);
  python_steps_launch how;
  how.interpreter = t.python.interpreter;
  how.start_timeout = seconds_of(t.python.start_timeout_s);
  how.hang_timeout = seconds_of(t.python.hang_timeout_s);
  how.workers = static_cast<std::size_t>(counts.preprocessors + counts.stragglers);
  if (auto bound = bind_python_steps(specs, how); !bound) {
    return error{bound.error().code(), t.source + ": transform: " + bound.error().message()};
  }
  return {};
}

}  // namespace conveyor

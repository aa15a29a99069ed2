#include <cstdio>
#include <sstream>
#include <string>
#include <variant>

#include "config/number_text.hpp"
#include "config/topology.hpp"

namespace conveyor {
namespace {

using config_detail::number_text;

std::string count_or_auto(int count) {
  return count == auto_count ? "auto" : std::to_string(count);
}

std::string size_text(int height, int width) {
  return std::to_string(height) + "x" + std::to_string(width);
}

std::string describe_gpus(const gpu_selection& gpus) {
  switch (gpus.kind) {
    case gpu_kind::auto_detect:
      return "auto (every CUDA device, or one host feeder)";
    case gpu_kind::device_ids: {
      std::string ids;
      for (int id : gpus.ids) {
        ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      }
      return "CUDA devices " + ids;
    }
    case gpu_kind::host_feeders:
      return std::to_string(gpus.count) + " host feeder(s)";
  }
  return "?";
}

// "[a, b]".
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    out += (out.empty() ? "" : ", ") + n;
  }
  return "[" + out + "]";
}

// " [image, boxes]" when a geometric step moves more than the default image.
std::string fields_text(const geometry_fields& fields) {
  return fields == default_geometry_fields() ? "" : " " + join_names(fields);
}

// " boxes" when a step writes a field other than "image".
std::string field_text(const std::string& field) {
  return field == image_field_name ? "" : " " + field;
}

// One description per transform op.
std::string describe_step(const decode_spec& spec) {
  std::string notes = spec.strict ? "" : "lenient";
  if (!spec.scaled) {
    notes += std::string(notes.empty() ? "" : ", ") + "full size";
  }
  if (spec.on != decode_device::cpu) {
    notes += std::string(notes.empty() ? "" : ", ") + "on " + std::string(to_string(spec.on)) +
             ": GPU " + std::to_string(spec.gpu) + ", " + std::to_string(spec.gpu_lanes) + " lanes";
  }
  std::string parts = spec.from.empty() && spec.to == image_field_name
                          ? ""
                          : " " + (spec.from.empty() ? "image" : spec.from) + " as " + spec.to;
  return "decode" + parts + (notes.empty() ? "" : " (" + notes + ")");
}
std::string describe_step(const random_resized_crop_spec& spec) {
  return "random_resized_crop " + size_text(spec.height, spec.width) + " " +
         std::string(to_string(spec.interp)) + fields_text(spec.fields);
}
std::string describe_step(const resize_spec& spec) {
  std::string size = spec.size != 0 ? "shorter side " + std::to_string(spec.size)
                                    : size_text(spec.height, spec.width);
  if (spec.max_size != 0) {
    size += " longer at most " + std::to_string(spec.max_size);
  }
  return "resize " + size + " " + std::string(to_string(spec.interp)) + fields_text(spec.fields);
}
std::string describe_step(const center_crop_spec& spec) {
  return "center_crop " + size_text(spec.height, spec.width) + fields_text(spec.fields);
}
std::string describe_step(const flip_spec& spec) {
  return "flip p=" + number_text(spec.p) + fields_text(spec.fields);
}
std::string describe_step(const normalize_spec& spec) {
  return "normalize" + field_text(spec.field);
}
std::string describe_step(const to_uint8_spec& spec) {
  return "to_uint8" + field_text(spec.field);
}
std::string describe_step(const rand_balanced_crop_spec& spec) {
  return "rand_balanced_crop " + std::to_string(spec.size[0]) + "x" + std::to_string(spec.size[1]) +
         "x" + std::to_string(spec.size[2]) + " of " + spec.image_part + ", " + spec.label_part +
         " as " + join_names(spec.fields) + " oversampling=" + number_text(spec.oversampling);
}
std::string describe_step(const rand_flip_spec& spec) {
  std::string axes;
  for (auto a : spec.axes) {
    axes += (axes.empty() ? "" : ", ") + std::to_string(a);
  }
  return "rand_flip axes=[" + axes + "]" + (spec.p ? " p=" + number_text(*spec.p) : std::string()) +
         " " + join_names(spec.fields);
}
std::string describe_step(const cast_spec& spec) {
  std::vector<std::string> pairs;
  for (std::size_t i = 0; i < spec.fields.size() && i < spec.types.size(); ++i) {
    pairs.push_back(spec.fields[i] + ":" + std::string(name_of(spec.types[i])));
  }
  return "cast " + join_names(pairs);
}
std::string describe_step(const rand_brightness_spec& spec) {
  return "rand_brightness factor=" + number_text(spec.factor) + " p=" + number_text(spec.p) +
         field_text(spec.field);
}
std::string describe_step(const gaussian_noise_spec& spec) {
  return "gaussian_noise mean=" + number_text(spec.mean) + " std=" + number_text(spec.std) +
         " p=" + number_text(spec.p) + field_text(spec.field);
}
std::string describe_step(const speed_perturb_spec& spec) {
  return "speed_perturb " + spec.field + " [" + number_text(spec.min) + ", " +
         number_text(spec.max) + "] at " + std::to_string(spec.sample_rate) + " Hz (" +
         std::string(to_string(spec.method)) + ")";
}
std::string describe_step(const trim_silence_spec& spec) {
  return "trim_silence " + spec.field + " below " + number_text(spec.cutoff_db) + " dB";
}
std::string describe_step(const dither_spec& spec) {
  return "dither " + spec.field + " " + number_text(spec.scale);
}
std::string describe_step(const preemphasis_spec& spec) {
  return "preemphasis " + spec.field + " " + number_text(spec.coeff);
}
std::string describe_step(const mel_spectrogram_spec& spec) {
  return std::string(spec.log ? "log " : "") + "mel_spectrogram " + spec.from + " as " + spec.to +
         " " + std::to_string(spec.n_mels) + " bands, n_fft " + std::to_string(spec.n_fft) +
         ", window " + std::to_string(spec.window) + ", hop " + std::to_string(spec.hop);
}
std::string describe_step(const normalize_features_spec& spec) {
  return "normalize_features " + spec.field;
}
std::string describe_step(const spec_augment_spec& spec) {
  return "spec_augment " + spec.field + " " + std::to_string(spec.freq_masks) +
         " freq masks <= " + std::to_string(spec.max_freq) + ", " +
         std::to_string(spec.time_masks) + " time masks <= " + number_text(spec.max_time);
}
std::string describe_step(const frame_splice_spec& spec) {
  return "frame_splice " + spec.field + " stack " + std::to_string(spec.stack) + " subsample " +
         std::to_string(spec.subsample);
}
std::string describe_step(const tokenize_spec& spec) {
  return "tokenize " + spec.from + " as " + spec.to + " by " + spec.vocabulary;
}
std::string describe_step(const python_transform_spec& spec) {
  std::string reads, makes;
  for (const auto& r : spec.reads) {
    reads += (reads.empty() ? "" : ", ") + r;
  }
  for (const auto& m : spec.makes) {
    makes += (makes.empty() ? "" : ", ") + m;
  }
  return "python " + spec.function + " (" + reads + " -> " + makes + ")";
}
std::string describe_step(const user_step_spec& spec) {
  return spec.name + " (user step)";
}
std::string describe_step(const built_step_spec& spec) {
  return spec.name;
}

std::string describe_transforms(const topology& node) {
  std::string out;
  for (const auto& spec : node.transforms) {
    out += (out.empty() ? "" : " -> ") +
           std::visit([](const auto& s) { return describe_step(s); }, spec);
    if (std::holds_alternative<normalize_spec>(spec)) {
      out += std::string(" (") + (node.normalize_on_gpu ? "gpu" : "cpu") + ", " +
             std::string(to_string(node.normalize_dtype)) + ")";
    }
  }
  return out;
}

// " bucket_by=audio bucket_axis=0 bucket_boundaries=[100, 200]" (or " bucket_count=8
// learned"), or "" without buckets.
std::string describe_buckets(const batching_config& b) {
  if (b.bucket_by.empty()) {
    return "";
  }
  std::string out = " bucket_by=" + b.bucket_by + " bucket_axis=" + std::to_string(b.bucket_axis);
  if (b.bucket_boundaries.empty()) {
    return out + " bucket_count=" + std::to_string(b.bucket_count) + " learned";
  }
  out += " bucket_boundaries=[";
  for (std::size_t i = 0; i < b.bucket_boundaries.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(b.bucket_boundaries[i]);
  }
  return out + "]";
}

std::string describe_serve(const serve_config& serve) {
  if (!serve.enabled()) {
    return "off (simulated trainer)";
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", serve.mode);
  return "socket=" + serve.socket + " jobs=" + std::to_string(serve.jobs) + " mode=" + mode +
         " resume=" + (serve.resume ? "true" : "false") + (serve.linger ? " linger=true" : "");
}

std::string describe_faults(const fault_config& faults) {
  if (!faults.enabled()) {
    return "off";
  }
  std::ostringstream out;
  out << "crash_preprocessor=" << number_text(faults.crash_preprocessor)
      << " crash_reader=" << number_text(faults.crash_reader)
      << " crash_straggler=" << number_text(faults.crash_straggler)
      << " delay=" << number_text(faults.delay_ms) << "ms@" << number_text(faults.delay_probability)
      << " read_error=" << number_text(faults.read_error) << " seed=" << faults.seed
      << " copy_fault=" << faults.copy_fault << " copy_stall=" << faults.copy_stall
      << " copy_delay=" << number_text(faults.copy_delay_ms) << "ms";
  return out.str();
}

// The [s3] settings (never credentials: they are not settings).
std::string describe_s3(const s3_config& s) {
  std::ostringstream out;
  out << "endpoint_url=" << (s.endpoint_url.empty() ? "default" : s.endpoint_url)
      << " region=" << (s.region.empty() ? "default" : s.region)
      << " profile=" << (s.profile.empty() ? "default" : s.profile)
      << " addressing=" << to_string(s.addressing) << " read_size=" << s.read_size
      << " connections=" << s.connections << " request_timeout_ms=" << s.request_timeout_ms
      << " retries=" << s.retries << " backoff_ms=" << s.backoff_ms << " prefetch_bytes="
      << (s.prefetch_bytes == 0 ? std::string("auto") : std::to_string(s.prefetch_bytes));
  return out.str();
}

// " shuffle_block=4194304 shuffle_span=32" for blocks; "" otherwise.
std::string describe_blocks(const dataset_config& d) {
  if (d.shuffle != shuffle_mode::blocks) {
    return "";
  }
  return " shuffle_block=" + std::to_string(d.shuffle_block) +
         " shuffle_span=" + std::to_string(d.shuffle_span);
}

}  // namespace

std::string describe(const topology& node) {
  const auto& d = node.dataset;
  const auto& p = node.pipeline;
  const auto& b = node.batching;
  const auto& s = node.supervision;
  std::ostringstream out;
  out << "topology: " << (node.source.empty() ? "(unnamed)" : node.source) << "\n"
      << "gpus: " << describe_gpus(node.gpus) << "\n"
      << "dataset: path=" << d.path << " format=" << to_string(d.format)
      << (d.map_parts.empty() ? "" : " map_parts=" + join_names(d.map_parts)) << " seed=" << d.seed
      << " shuffle=" << to_string(d.shuffle) << describe_blocks(d) << "\n"
      << "pipeline: batch_size=" << p.batch_size
      << " preprocessors=" << count_or_auto(p.preprocessors)
      << " readers=" << count_or_auto(p.readers) << " prefetch_batches=" << p.prefetch_batches
      << " stragglers=" << count_or_auto(p.stragglers)
      << " per_worker_limit=" << count_or_auto(p.per_worker_limit)
      << " window_samples=" << count_or_auto(p.window_samples)
      << " next_timeout_s=" << number_text(p.next_timeout_s)
      << " autotune=" << (p.autotune ? "true" : "false")
      << " max_window_samples=" << count_or_auto(p.max_window_samples) << "\n"
      << "batching: policy=" << to_string(b.policy)
      << " straggler_percentile=" << number_text(b.straggler_percentile)
      << " min_budget_ms=" << number_text(b.min_budget_ms)
      << " handoff_share=" << number_text(b.handoff_share)
      << " straggler_backlog=" << b.straggler_backlog << describe_buckets(b) << "\n"
      << "trainer: step_ms=" << number_text(node.trainer.step_ms)
      << " epochs=" << node.trainer.epochs
      << " ids_file=" << (node.trainer.ids_file.empty() ? "none" : node.trainer.ids_file)
      << " checkpoint_every=" << node.trainer.checkpoint_every << "\n"
      << "monitor: interval_ms=" << node.monitor.interval_ms
      << " metrics=" << (node.monitor.metrics.empty() ? "off" : node.monitor.metrics) << "\n"
      << "serve: " << describe_serve(node.serve) << "\n"
      << "cluster: rank=" << node.cluster.rank_or_default()
      << " world=" << node.cluster.world_or_default()
      << " shard_by=" << to_string(node.cluster.split) << "\n"
      << "cache: "
      << (node.cache.enabled() ? "memory=" + std::to_string(node.cache.memory) + " bytes" : "off")
      << "\n"
      << "s3: " << describe_s3(node.s3) << "\n"
      << "supervision: strategy=" << to_string(s.strategy) << " max_restarts=" << s.max_restarts
      << " in " << number_text(s.restart_period_s)
      << "s backoff_ms=" << number_text(s.backoff_min_ms) << ".." << number_text(s.backoff_max_ms)
      << " max_sample_retries=" << s.max_sample_retries << " hang_timeout_ms=" << s.hang_timeout_ms
      << " quarantine_report=" << (s.quarantine_report.empty() ? "none" : s.quarantine_report)
      << "\n"
      << "faults: " << describe_faults(node.faults) << "\n";
  if (d.format == dataset_format::python) {
    const auto& py = node.python;
    out << "python: length=" << py.length << " interpreter=" << py.interpreter
        << " worker=" << py.worker << " start_timeout_s=" << number_text(py.start_timeout_s)
        << " hang_timeout_s=" << number_text(py.hang_timeout_s)
        << " max_text_bytes=" << (py.max_text_bytes ? std::to_string(py.max_text_bytes) : "auto")
        << " layout_file=" << (py.layout_file.empty() ? "none" : py.layout_file)
        << " order_file=" << (py.order_file.empty() ? "none" : py.order_file) << " zygote="
        << (py.zygote_socket < 0 ? std::string("spawned")
                                 : "inherited (socket " + std::to_string(py.zygote_socket) +
                                       ", pidfd " + std::to_string(py.zygote_pidfd) + ")")
        << "\n"
        << "transform: dataset[i] in a Python worker";
  } else {
    out << "transform: " << describe_transforms(node);
  }
  return out.str();
}

}  // namespace conveyor

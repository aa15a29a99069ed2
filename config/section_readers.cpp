#include "config/section_readers.hpp"

#include "config/bucket_reader.hpp"

#include "core/base/byte_size.hpp"
#include "core/cluster/run_secret.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>

namespace conveyor::config_detail {
namespace {

/// `gpus = [ids]`: each an integer >= 0, none twice, at least one.
gpu_selection read_device_ids(table_reader& root, const toml::node& value, const toml::array& ids) {
  gpu_selection out;
  out.kind = gpu_kind::device_ids;
  if (ids.empty()) {
    root.fail(value, "gpus", "must list at least one device id (or be \"auto\")");
    return out;
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::string path = root.path_of("gpus") + "[" + std::to_string(i) + "]";
    auto id = read_int<int>(root.errors(), ids[i], path, at_least(0));
    if (!id) {
      continue;
    }
    if (std::find(out.ids.begin(), out.ids.end(), *id) != out.ids.end()) {
      root.errors().fail(&ids[i].source(), path,
                         "device " + std::to_string(*id) + " is listed twice");
      continue;
    }
    out.ids.push_back(*id);
  }
  return out;
}

// A byte size at `key` ("512M", "8G"); 0 when absent or "" (or wrong: then reported).
std::uint64_t byte_size(table_reader& section, std::string_view key) {
  const auto* value = section.find(key);
  auto text = section.string(key, "");
  if (value == nullptr || text.empty()) {
    return 0;
  }
  auto bytes = parse_byte_size(text);
  if (!bytes) {
    section.fail(
        *value, key,
        "must be a size such as \"512M\" or \"8G\", or \"\" for none (got \"" + text + "\")");
    return 0;
  }
  return *bytes;
}

/// dataset.shuffle: true or "global", false or "none", or "blocks"; with blocks, shuffle_block
/// (bytes, 1 to 4G) and shuffle_span (blocks, 1 to 2^20).
void read_shuffle(table_reader& section, dataset_config& out) {
  const auto* value = section.find("shuffle");
  if (value != nullptr && value->is_boolean()) {
    out.shuffle = section.boolean("shuffle", true) ? shuffle_mode::global : shuffle_mode::none;
  } else if (value != nullptr && !value->is_string()) {
    section.fail(*value, "shuffle",
                 std::string("expected true, false, \"global\", \"blocks\" or \"none\", got ") +
                     std::string(type_name(*value)));
  } else {
    out.shuffle = section.choice("shuffle", out.shuffle,
                                 {shuffle_mode::global, shuffle_mode::blocks, shuffle_mode::none});
  }
  if (const auto* block = section.find("shuffle_block")) {
    const auto text = section.string("shuffle_block", "");
    const auto bytes = parse_byte_size(text);
    if (bytes && *bytes > 0 && *bytes <= (1ull << 32)) {
      out.shuffle_block = *bytes;
    } else if (block->is_string()) {
      section.fail(*block, "shuffle_block",
                   "must be a size of 1 byte to 4G, such as \"1M\" (got \"" + text + "\")");
    }
  }
  out.shuffle_span = section.integer("shuffle_span", out.shuffle_span, closed(1, 1 << 20));
}

}  // namespace

gpu_selection read_gpus(table_reader& root) {
  gpu_selection out;
  const auto* value = root.find("gpus");
  if (value == nullptr) {
    return out;
  }
  if (const auto* text = value->as_string(); text != nullptr && text->get() == "auto") {
    return out;
  }
  if (const auto* ids = value->as_array()) {
    return read_device_ids(root, *value, *ids);
  }
  if (value->is_integer()) {
    if (auto count = read_int<int>(root.errors(), *value, root.path_of("gpus"), at_least(1))) {
      out.kind = gpu_kind::host_feeders;
      out.count = *count;
    }
    return out;
  }
  root.fail(*value, "gpus",
            "expected \"auto\", an array of CUDA device ids or a number of host feeders, got " +
                (value->is_string() ? "\"" + value->as_string()->get() + "\""
                                    : std::string(type_name(*value))));
  return out;
}

dataset_config read_dataset(table_reader& section) {
  dataset_config out;
  if (const auto* path = section.required("path")) {
    out.path = read_string(section.errors(), *path, section.path_of("path")).value_or("");
    if (path->is_string() && out.path.empty()) {
      section.fail(*path, "path", "must not be empty");
    }
  }
  out.format = section.choice(
      "format", out.format,
      {dataset_format::folder, dataset_format::shards, dataset_format::webdataset,
       dataset_format::npy_pairs, dataset_format::librispeech, dataset_format::python});
  const auto* map_parts = section.find("map_parts");
  if (map_parts == nullptr || !map_parts->is_array() || !map_parts->as_array()->empty()) {
    out.map_parts = section.strings("map_parts", out.map_parts, 16);  // [] is the default: none
  }
  out.seed = section.integer("seed", out.seed, at_least(0));
  read_shuffle(section, out);
  if (out.shuffle == shuffle_mode::blocks && out.format == dataset_format::python) {
    section.fail(*section.find("shuffle"), "shuffle",
                 "\"blocks\" orders the records of files (dataset.format \"shards\", "
                 "\"webdataset\"); a Python Dataset (format \"python\") has none: use true "
                 "or false");
  }
  return out;
}

pipeline_config read_pipeline(table_reader& section) {
  pipeline_config out;
  out.batch_size = section.integer("batch_size", out.batch_size, at_least(1));
  out.preprocessors =
      section.auto_or_integer("preprocessors", out.preprocessors, auto_count, at_least(1));
  out.readers = section.auto_or_integer("readers", out.readers, auto_count, at_least(1));
  out.prefetch_batches =
      section.integer("prefetch_batches", out.prefetch_batches, closed(1, 1 << 16));
  out.stragglers = section.auto_or_integer("stragglers", out.stragglers, auto_count, at_least(0));
  out.per_worker_limit =
      section.auto_or_integer("per_worker_limit", out.per_worker_limit, auto_count, at_least(1));
  out.window_samples =
      section.auto_or_integer("window_samples", out.window_samples, auto_count, at_least(1));
  out.next_timeout_s = section.number("next_timeout_s", out.next_timeout_s, open(0.0, 1e9));
  out.autotune = section.boolean("autotune", out.autotune);
  out.max_window_samples = section.auto_or_integer("max_window_samples", out.max_window_samples,
                                                   auto_count, at_least(1));
  return out;
}

batching_config read_batching(table_reader& section) {
  batching_config out;
  out.policy = section.choice("policy", out.policy,
                              {batching_policy::in_order, batching_policy::latency_aware});
  out.straggler_percentile =
      section.number("straggler_percentile", out.straggler_percentile, open(0.0, 100.0));
  out.min_budget_ms = section.number("min_budget_ms", out.min_budget_ms, at_least(0.0));
  out.handoff_share = section.number("handoff_share", out.handoff_share, closed(0.0, 1.0));
  out.straggler_backlog = section.integer("straggler_backlog", out.straggler_backlog, at_least(0));
  read_bucketing(section, out);
  return out;
}

trainer_config read_trainer(table_reader& section) {
  trainer_config out;
  out.step_ms = section.number("step_ms", out.step_ms, at_least(0.0));
  out.epochs = section.integer("epochs", out.epochs, at_least(1));
  out.ids_file = section.string("ids_file", out.ids_file);
  out.checkpoint_every = section.integer("checkpoint_every", out.checkpoint_every, at_least(1));
  return out;
}

monitor_config read_monitor(table_reader& section) {
  monitor_config out;
  out.interval_ms = section.integer("interval_ms", out.interval_ms, at_least(10));
  out.metrics = section.string("metrics", out.metrics);
  if (const auto* value = section.find("metrics"); value != nullptr && !out.metrics.empty()) {
    if (auto address = parse_peer_address(out.metrics, port_zero::any_port); !address) {
      section.fail(*value, "metrics", address.error().message());
    }
  }
  return out;
}

namespace {

// "0600", "660", "0o660": octal permission bits; nullopt when the text is not one.
std::optional<unsigned> octal_mode(const std::string& text) {
  std::string digits = text.rfind("0o", 0) == 0 ? text.substr(2) : text;
  if (digits.empty() || digits.size() > 4) {
    return std::nullopt;
  }
  unsigned mode = 0;
  for (char c : digits) {
    if (c < '0' || c > '7') {
      return std::nullopt;
    }
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  return mode;
}

}  // namespace

serve_config read_serve(table_reader& section) {
  serve_config out;
  out.socket = section.string("socket", out.socket);
  // sun_path holds 108 bytes with the terminating NUL (unix(7)).
  if (const auto* value = section.find("socket"); value && out.socket.size() > 107) {
    section.fail(*value, "socket",
                 "is " + std::to_string(out.socket.size()) +
                     " bytes long; a Unix socket path holds at most 107 (use a shorter path)");
  }
  out.jobs = section.integer("jobs", out.jobs, at_least(1));
  out.resume = section.boolean("resume", out.resume);
  out.linger = section.boolean("linger", out.linger);
  out.max_sessions = section.integer("max_sessions", out.max_sessions, at_least(0));
  out.attach_timeout_s = section.number("attach_timeout_s", out.attach_timeout_s, above(0.0));
  out.state_key_file = section.string("state_key_file", out.state_key_file);
  if (const auto* value = section.find("mode")) {
    auto text = section.string("mode", "0600");
    auto mode = octal_mode(text);
    if (!mode || *mode > 0777 || (*mode & 0600U) != 0600U) {
      section.fail(*value, "mode",
                   "must be octal permission bits that give the owner read and write, e.g. "
                   "\"0600\" or \"0660\" (got \"" +
                       text + "\")");
    } else {
      out.mode = *mode;
    }
  }
  return out;
}

s3_config read_s3(table_reader& section) {
  s3_config out;
  out.endpoint_url = section.string("endpoint_url", out.endpoint_url);
  out.region = section.string("region", out.region);
  out.profile = section.string("profile", out.profile);
  out.addressing =
      section.choice("addressing", out.addressing,
                     {s3_addressing::automatic, s3_addressing::path, s3_addressing::virtual_host});
  if (section.find("read_size") != nullptr) {
    out.read_size = byte_size(section, "read_size");
    if (out.read_size < (64u << 10) || out.read_size > (1ull << 32)) {
      section.fail(*section.find("read_size"), "read_size",
                   "must be a size from \"64K\" to \"4G\" (one range GET)");
    }
  }
  out.connections = section.integer("connections", out.connections, closed(1, 256));
  out.request_timeout_ms =
      section.integer("request_timeout_ms", out.request_timeout_ms, closed(100, 3600000));
  out.retries = section.integer("retries", out.retries, closed(0, 20));
  out.backoff_ms = section.integer("backoff_ms", out.backoff_ms, closed(1, 60000));
  out.prefetch_bytes = byte_size(section, "prefetch_bytes");
  return out;
}

python_config read_python(table_reader& section) {
  python_config out;
  if (section.required("length") != nullptr) {
    out.length = section.integer("length", out.length, at_least(1));
  }
  out.interpreter = section.string("interpreter", out.interpreter);
  if (section.required("worker") != nullptr) {
    out.worker = section.string("worker", out.worker);
  }
  out.start_timeout_s = section.number("start_timeout_s", out.start_timeout_s, above(0));
  out.hang_timeout_s = section.number("hang_timeout_s", out.hang_timeout_s, above(0));
  out.max_text_bytes = section.integer("max_text_bytes", out.max_text_bytes, closed(0, 1 << 30));
  out.layout_file = section.string("layout_file", out.layout_file);
  out.order_file = section.string("order_file", out.order_file);
  out.zygote_socket = section.integer("zygote_socket", out.zygote_socket, closed(0, 1 << 20));
  out.zygote_pidfd = section.integer("zygote_pidfd", out.zygote_pidfd, closed(0, 1 << 20));
  if (const auto* given = section.find("zygote_socket");
      given && (out.zygote_pidfd < 0 || out.zygote_socket == out.zygote_pidfd)) {
    section.fail(*given, "zygote_socket", "needs python.zygote_pidfd, another descriptor");
  } else if (const auto* pidfd = section.find("zygote_pidfd"); pidfd && out.zygote_socket < 0) {
    section.fail(*pidfd, "zygote_pidfd", "needs python.zygote_socket");
  }
  return out;
}

python_config read_python_for_steps(table_reader& section) {
  python_config out;
  out.interpreter = section.string("interpreter", out.interpreter);
  out.start_timeout_s = section.number("start_timeout_s", out.start_timeout_s, above(0));
  out.hang_timeout_s = section.number("hang_timeout_s", out.hang_timeout_s, above(0));
  return out;
}

cache_config read_cache(table_reader& section) {
  cache_config out;
  out.memory = byte_size(section, "memory");
  out.disk = section.string("disk", out.disk);
  out.disk_size = byte_size(section, "disk_size");
  if (const auto* size = section.find("disk_size"); size && out.disk.empty() && out.disk_size > 0) {
    section.fail(*size, "disk_size", "needs cache.disk, the directory of the disk tier");
  }
  if (const auto* disk = section.find("disk"); disk && !out.disk.empty() && out.disk_size == 0) {
    section.fail(*disk, "disk", "needs cache.disk_size, how much of it the cache may use");
  }
  return out;
}

namespace {

// cluster.peers: distinct "host:port" strings.
std::vector<peer_address> read_peers(table_reader& section) {
  std::vector<peer_address> out;
  const auto* value = section.find("peers");
  if (value == nullptr) {
    return out;
  }
  const auto* list = value->as_array();
  if (list == nullptr) {
    section.fail(*value, "peers",
                 std::string("must be an array of \"host:port\" strings, got ") +
                     std::string(type_name(*value)));
    return out;
  }
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto path = section.path_of("peers") + "[" + std::to_string(i) + "]";
    auto text = read_string(section.errors(), (*list)[i], path);
    if (!text) {
      continue;
    }
    auto address = parse_peer_address(*text);
    if (!address) {
      section.errors().fail(&(*list)[i].source(), path, address.error().message());
    } else if (std::find(out.begin(), out.end(), *address) != out.end()) {
      section.errors().fail(&(*list)[i].source(), path, *text + " is listed twice");
    } else {
      out.push_back(std::move(*address));
    }
  }
  return out;
}

// A certificate file at `key`: "" when absent; a file that does not exist is reported.
std::string certificate_file(table_reader& section, std::string_view key) {
  auto path = section.string(key, "");
  std::error_code ec;
  if (const auto* value = section.find(key);
      value && !path.empty() && !std::filesystem::is_regular_file(path, ec)) {
    section.fail(*value, key, "no such file: " + path);
  }
  return path;
}

tls_files read_tls(table_reader& section) {
  tls_files out{certificate_file(section, "tls_certificate"), certificate_file(section, "tls_key"),
                certificate_file(section, "tls_cafile")};
  const bool any = !out.certificate.empty() || !out.key.empty() || !out.cafile.empty();
  const bool all = !out.certificate.empty() && !out.key.empty() && !out.cafile.empty();
  if (any && !all) {
    section.fail_here(
        "tls_certificate, tls_key and tls_cafile go together: set all three for TLS between "
        "the nodes, or none");
  }
  return all ? out : tls_files{};
}

// Plain TCP beyond this machine only when the operator accepts the risk (cluster.insecure).
void refuse_plain_tcp_beyond_loopback(table_reader& section, const cluster_config& c) {
  if (c.tls.enabled() || c.insecure) {
    return;
  }
  auto beyond = std::find_if(c.peers.begin(), c.peers.end(),
                             [](const peer_address& a) { return !a.loopback(); });
  if (beyond != c.peers.end()) {
    section.fail(*section.find("peers"), "peers",
                 beyond->text() +
                     " is not a loopback address, and the nodes would talk plain TCP: anyone "
                     "who reaches the port could make a node allocate up to 4 GiB per "
                     "connection (CAF 0.17 bounds no message size) and read or alter what the "
                     "nodes send; set tls_certificate, tls_key and tls_cafile, or insecure = "
                     "true to accept the risk");
  }
}

// cluster.secret_file: "" when absent; a file that would be refused at start is reported.
std::string secret_file(table_reader& section) {
  auto path = section.string("secret_file", "");
  if (const auto* value = section.find("secret_file"); value && !path.empty()) {
    if (auto secret = read_secret_file(path); !secret) {
      section.fail(*value, "secret_file", secret.error().message());
    }
  }
  return path;
}

}  // namespace

cluster_config read_cluster(table_reader& section) {
  cluster_config out;
  if (section.find("world") != nullptr) {
    out.world = section.integer("world", 1, at_least(1));
  }
  if (const auto* value = section.find("rank")) {
    out.rank = section.integer("rank", 0, at_least(0));
    if (*out.rank >= out.world_or_default()) {
      section.fail(*value, "rank",
                   "must be below cluster.world = " + std::to_string(out.world_or_default()) +
                       " (got " + std::to_string(*out.rank) + ")");
    }
  }
  out.split = section.choice("shard_by", out.split, {shard_by::sample, shard_by::shard});
  const auto errors_before = section.errors().error_count();
  out.peers = read_peers(section);
  const bool peers_read = section.errors().error_count() == errors_before;
  if (const auto* value = section.find("peers");
      value && out.world && !out.peers.empty() &&
      out.peers.size() != static_cast<std::size_t>(*out.world)) {
    section.fail(*value, "peers",
                 "lists " + std::to_string(out.peers.size()) + " nodes, but cluster.world = " +
                     std::to_string(*out.world) + " (one address per node, in rank order)");
  }
  out.peer_timeout_ms = section.integer("peer_timeout_ms", out.peer_timeout_ms, at_least(1));
  out.peer_retry_ms = section.integer("peer_retry_ms", out.peer_retry_ms, at_least(1));
  out.peer_wait_s = section.number("peer_wait_s", out.peer_wait_s, closed(0.0, 86400.0));
  out.tls = read_tls(section);
  out.insecure = section.boolean("insecure", out.insecure);
  if (peers_read) {  // a list wrong in itself is reported as such first
    refuse_plain_tcp_beyond_loopback(section, out);
  }
  out.secret_file = secret_file(section);
  return out;
}

supervision_config read_supervision(table_reader& section) {
  supervision_config out;
  out.strategy = section.choice("strategy", out.strategy,
                                {restart_strategy::one_for_one, restart_strategy::one_for_all,
                                 restart_strategy::rest_for_one});
  out.max_restarts = section.integer("max_restarts", out.max_restarts, at_least(0));
  out.restart_period_s = section.number("restart_period_s", out.restart_period_s, above(0.0));
  out.backoff_min_ms = section.number("backoff_min_ms", out.backoff_min_ms, at_least(0.0));
  interval above_min = at_least(out.backoff_min_ms);
  above_min.min_name = "backoff_min_ms";
  // An absent backoff_max_ms below a configured backoff_min_ms follows it up.
  out.backoff_max_ms =
      std::max(out.backoff_min_ms, section.number("backoff_max_ms", out.backoff_max_ms, above_min));
  out.max_sample_retries =
      section.integer("max_sample_retries", out.max_sample_retries, at_least(0));
  out.hang_timeout_ms = section.integer("hang_timeout_ms", out.hang_timeout_ms, at_least(0));
  out.quarantine_report = section.string("quarantine_report", out.quarantine_report);
  return out;
}

fault_config read_faults(table_reader& section) {
  fault_config out;
  auto probability = closed(0.0, 1.0);
  out.crash_preprocessor =
      section.number("crash_preprocessor", out.crash_preprocessor, probability);
  out.crash_reader = section.number("crash_reader", out.crash_reader, probability);
  out.crash_straggler = section.number("crash_straggler", out.crash_straggler, probability);
  out.delay_ms = section.number("delay_ms", out.delay_ms, at_least(0.0));
  out.delay_probability = section.number("delay_probability", out.delay_probability, probability);
  out.read_error = section.number("read_error", out.read_error, probability);
  out.seed = section.integer("seed", out.seed, at_least(0));
  out.copy_fault = section.integer("copy_fault", out.copy_fault, at_least(0));
  out.copy_stall = section.integer("copy_stall", out.copy_stall, at_least(0));
  out.copy_delay_ms = section.number("copy_delay_ms", out.copy_delay_ms, at_least(0.0));
  return out;
}

}  // namespace conveyor::config_detail

// The TOML topology: the shipped files load with their documented values; every bad topology
// is errc::invalid_config naming file:line:column (or the override) and the key path.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/load_topology.hpp"
#include "config/topology.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

const std::string source_dir = CONVEYOR_SOURCE_DIR;

constexpr std::string_view dataset_table = "[dataset]\npath = \"/data/x\"\n";
constexpr std::string_view transform_tables =
    "[[transform]]\nop = \"decode\"\n\n[[transform]]\nop = \"normalize\"\n";
/// The smallest valid topology: a dataset path and decode -> normalize (8 lines).
const std::string minimal = std::string(dataset_table) + "\n" + std::string(transform_tables);

expected<topology> load(std::string_view toml, const std::vector<std::string>& overrides = {}) {
  return load_topology_string(toml, "node.toml", overrides);
}

/// `toml` followed by the minimal topology.
expected<topology> load_with(const std::string& toml,
                             const std::vector<std::string>& overrides = {}) {
  return load(toml + minimal, overrides);
}

/// The minimal topology followed by `toml` (for keys of [[transform]] tables).
expected<topology> load_after(const std::string& toml) {
  return load(minimal + toml);
}

/// The minimal topology with `toml` added to its [dataset] table.
expected<topology> load_dataset(const std::string& toml) {
  return load(std::string(dataset_table) + toml + std::string(transform_tables));
}

/// Fails unless `result` is errc::invalid_config with a message containing every part.
void expect_invalid(const expected<topology>& result,
                    std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(result.has_value()) << "expected an error containing '" << *parts.begin() << "'";
  EXPECT_EQ(result.error().code(), errc::invalid_config) << result.error().what();
  for (auto part : parts) {
    EXPECT_NE(result.error().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << result.error().message();
  }
}

template <class Spec>
const Spec& spec_at(const topology& node, std::size_t i) {
  return std::get<Spec>(node.transforms.at(i));
}

// --- the shipped files ---------------------------------------------------------------------

TEST(Topology, DefaultTomlGivesTheDocumentedValues) {
  auto node = load_topology_file(source_dir + "/config/default.toml");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->gpus.kind, gpu_kind::auto_detect);
  EXPECT_EQ(node->dataset.path, "build/sample/shards");
  EXPECT_EQ(node->dataset.format, dataset_format::shards);
  EXPECT_EQ(node->dataset.seed, 0U);
  EXPECT_EQ(node->dataset.shuffle, shuffle_mode::global);
  EXPECT_EQ(node->pipeline.batch_size, 64);
  EXPECT_EQ(node->pipeline.preprocessors, auto_count);
  EXPECT_EQ(node->pipeline.readers, auto_count);
  EXPECT_EQ(node->pipeline.prefetch_batches, 2);
  EXPECT_EQ(node->pipeline.stragglers, auto_count);
  EXPECT_EQ(node->pipeline.per_worker_limit, auto_count);
  EXPECT_EQ(node->pipeline.window_samples, auto_count);
  EXPECT_EQ(node->batching.policy, batching_policy::latency_aware);
  EXPECT_EQ(node->batching.straggler_percentile, 90.0);
  EXPECT_EQ(node->batching.min_budget_ms, 5.0);
  EXPECT_EQ(node->trainer.step_ms, 0.0);
  EXPECT_EQ(node->trainer.epochs, 1);
  EXPECT_EQ(node->monitor.interval_ms, 1000);
  EXPECT_EQ(node->supervision.strategy, restart_strategy::one_for_one);
  EXPECT_EQ(node->supervision.max_restarts, 5);
  EXPECT_EQ(node->supervision.restart_period_s, 10.0);
  EXPECT_EQ(node->supervision.backoff_min_ms, 10.0);
  EXPECT_EQ(node->supervision.backoff_max_ms, 1000.0);
  EXPECT_EQ(node->supervision.max_sample_retries, 2);
  EXPECT_EQ(node->supervision.hang_timeout_ms, 30000);
  EXPECT_EQ(node->supervision.quarantine_report, "");
  EXPECT_FALSE(node->faults.enabled());
  EXPECT_FALSE(node->normalize_on_gpu);
  EXPECT_EQ(node->normalize_dtype, output_dtype::float32);

  // The transforms are the ImageNet training recipe.
  auto recipe = imagenet_train_recipe();
  ASSERT_EQ(node->transforms.size(), recipe.size());
  for (std::size_t i = 0; i < recipe.size(); ++i) {
    EXPECT_EQ(op_name(node->transforms[i]), op_name(recipe[i]));
  }
  EXPECT_TRUE(spec_at<decode_spec>(*node, 0).strict);
  EXPECT_TRUE(spec_at<decode_spec>(*node, 0).scaled);
  const auto& crop = spec_at<random_resized_crop_spec>(*node, 1);
  EXPECT_EQ(crop.height, 224);
  EXPECT_EQ(crop.width, 224);
  EXPECT_EQ(crop.params.scale, (std::array<double, 2>{0.08, 1.0}));
  EXPECT_DOUBLE_EQ(crop.params.ratio[0], 0.75);
  EXPECT_DOUBLE_EQ(crop.params.ratio[1], 4.0 / 3.0);
  EXPECT_EQ(crop.interp, interpolation::bilinear);
  EXPECT_EQ(spec_at<flip_spec>(*node, 2).p, 0.5);
  const auto& normalize = spec_at<normalize_spec>(*node, 3);
  EXPECT_EQ(normalize.mean, (std::array<double, 3>{0.485, 0.456, 0.406}));
  EXPECT_EQ(normalize.stddev, (std::array<double, 3>{0.229, 0.224, 0.225}));
}

TEST(Topology, EvalExampleLoads) {
  auto node = load_topology_file(source_dir + "/config/examples/imagenet-eval.toml");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->dataset.shuffle, shuffle_mode::none);
  ASSERT_EQ(node->transforms.size(), 4U);
  const auto& resize = std::get<resize_spec>(node->transforms[1]);
  EXPECT_EQ(resize.size, 256);
  EXPECT_EQ(resize.interp, interpolation::bilinear);
  EXPECT_EQ(std::get<center_crop_spec>(node->transforms[2]).width, 224);
}

TEST(Topology, FourGpuExampleLoads) {
  auto node = load_topology_file(source_dir + "/config/examples/four-gpu-node.toml");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->gpus.kind, gpu_kind::device_ids);
  EXPECT_EQ(node->gpus.ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(node->dataset.seed, 42U);
  EXPECT_EQ(node->pipeline.batch_size, 256);
  EXPECT_EQ(node->pipeline.readers, 2);
  EXPECT_EQ(node->pipeline.prefetch_batches, 4);
  EXPECT_EQ(node->batching.policy, batching_policy::latency_aware);
  EXPECT_EQ(node->trainer.step_ms, 40.0);
  EXPECT_EQ(node->trainer.epochs, 90);
  EXPECT_EQ(node->monitor.interval_ms, 2000);
  EXPECT_EQ(node->supervision.quarantine_report, "quarantine.txt");
  EXPECT_TRUE(node->normalize_on_gpu);
  EXPECT_EQ(node->normalize_dtype, output_dtype::bfloat16);
  EXPECT_EQ(node->transforms.size(), 4U);
}

TEST(Topology, MinimalDocumentTakesEveryDefault) {
  auto node = load(minimal);
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->source, "node.toml");
  EXPECT_EQ(node->gpus.kind, gpu_kind::auto_detect);
  EXPECT_EQ(node->dataset.path, "/data/x");
  EXPECT_EQ(node->pipeline.batch_size, pipeline_config{}.batch_size);
  EXPECT_EQ(node->batching.straggler_percentile, batching_config{}.straggler_percentile);
  EXPECT_EQ(node->supervision.hang_timeout_ms, supervision_config{}.hang_timeout_ms);
  EXPECT_EQ(node->transforms.size(), 2U);
}

TEST(Topology, MissingFileIsNotFound) {
  testing::temp_dir dir;
  auto node = load_topology_file(dir / "absent.toml");
  ASSERT_FALSE(node.has_value());
  EXPECT_EQ(node.error().code(), errc::not_found);
  EXPECT_NE(node.error().message().find("absent.toml"), std::string::npos);
}

TEST(Topology, FileErrorsNameTheFile) {
  testing::temp_dir dir;
  auto path = dir / "node.toml";
  std::ofstream(path) << "[pipeline]\nbatch_size = -3\n" << minimal;
  expect_invalid(load_topology_file(path),
                 {path.string() + ":2:14: pipeline.batch_size: must be >= 1 (got -3)"});
}

// --- values and shapes ---------------------------------------------------------------------

TEST(Topology, GpusTakesAutoIdsOrACount) {
  auto ids = load_with("gpus = [1, 0]\n");
  ASSERT_TRUE(ids.has_value()) << ids.error().what();
  EXPECT_EQ(ids->gpus.kind, gpu_kind::device_ids);
  EXPECT_EQ(ids->gpus.ids, (std::vector<int>{1, 0}));
  auto count = load_with("gpus = 3\n");
  ASSERT_TRUE(count.has_value()) << count.error().what();
  EXPECT_EQ(count->gpus.kind, gpu_kind::host_feeders);
  EXPECT_EQ(count->gpus.count, 3);
  auto automatic = load_with("gpus = \"auto\"\n");
  ASSERT_TRUE(automatic.has_value());
  EXPECT_EQ(automatic->gpus.kind, gpu_kind::auto_detect);
}

TEST(Topology, IntegersAreAcceptedForFloats) {
  auto node = load_with("[trainer]\nstep_ms = 12\n");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->trainer.step_ms, 12.0);
}

TEST(Topology, AutoCountsAndExplicitCounts) {
  auto node = load_with("[pipeline]\npreprocessors = 6\nstragglers = 0\nwindow_samples = 300\n");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->pipeline.preprocessors, 6);
  EXPECT_EQ(node->pipeline.stragglers, 0);
  EXPECT_NE(node->pipeline.stragglers, auto_count) << "0 straggler actors is none, not \"auto\"";
  EXPECT_NE(describe(*node).find("stragglers=0 "), std::string::npos) << describe(*node);
  EXPECT_EQ(node->pipeline.window_samples, 300);
  expect_invalid(load_with("[pipeline]\nwindow_samples = 0\n"),
                 {"node.toml:2:18: pipeline.window_samples: must be >= 1 (got 0)"});
  expect_invalid(load_with("[pipeline]\npreprocessors = 0\n"),
                 {"node.toml:2:17: pipeline.preprocessors: must be >= 1 (got 0)"});
  expect_invalid(load_with("[pipeline]\nstragglers = \"many\"\n"),
                 {"pipeline.stragglers: must be \"auto\" or an integer (got \"many\")"});
}

TEST(Topology, TransformParameters) {
  auto node = load(R"([dataset]
path = "/x"
[[transform]]
op = "decode"
strict = false
[[transform]]
op = "resize"
size = 256
interpolation = "area"
[[transform]]
op = "center_crop"
size = [224, 200]
[[transform]]
op = "random_resized_crop"
size = [112, 96]
scale = [0.5, 1]
ratio = [1, 2]
interpolation = "bicubic"
[[transform]]
op = "resize"
size = [64, 48]
[[transform]]
op = "to_uint8"
)");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_FALSE(spec_at<decode_spec>(*node, 0).strict);
  EXPECT_EQ(spec_at<resize_spec>(*node, 1).size, 256);
  EXPECT_EQ(spec_at<resize_spec>(*node, 1).interp, interpolation::area);
  EXPECT_EQ(spec_at<center_crop_spec>(*node, 2).height, 224);
  EXPECT_EQ(spec_at<center_crop_spec>(*node, 2).width, 200);
  const auto& crop = spec_at<random_resized_crop_spec>(*node, 3);
  EXPECT_EQ(crop.height, 112);
  EXPECT_EQ(crop.width, 96);
  EXPECT_EQ(crop.params.scale, (std::array<double, 2>{0.5, 1.0}));
  EXPECT_EQ(crop.params.ratio, (std::array<double, 2>{1.0, 2.0}));
  EXPECT_EQ(crop.interp, interpolation::bicubic);
  EXPECT_EQ(spec_at<resize_spec>(*node, 4).size, 0);
  EXPECT_EQ(spec_at<resize_spec>(*node, 4).height, 64);
  EXPECT_EQ(spec_at<resize_spec>(*node, 4).width, 48);
  EXPECT_TRUE(std::holds_alternative<to_uint8_spec>(node->transforms.at(5)));
}

TEST(Topology, DecodeScaledIsOnUnlessTurnedOff) {
  auto node = load(minimal);
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_TRUE(spec_at<decode_spec>(*node, 0).scaled);
  const std::string decode_with = "[dataset]\npath = \"/x\"\n[[transform]]\nop = \"decode\"\n";
  const std::string normalize = "[[transform]]\nop = \"normalize\"\n";
  auto off = load(decode_with + "scaled = false\n" + normalize);
  ASSERT_TRUE(off.has_value()) << off.error().what();
  EXPECT_FALSE(spec_at<decode_spec>(*off, 0).scaled);
  EXPECT_TRUE(spec_at<decode_spec>(*off, 0).strict);
  auto text = describe(*off);
  EXPECT_NE(text.find("transform: decode (full size) -> normalize"), std::string::npos) << text;
  expect_invalid(load(decode_with + "scaled = \"no\"\n" + normalize),
                 {"node.toml:5:10: transform[0].scaled: expected a boolean, got a string"});
  expect_invalid(load(decode_with + "scale = false\n" + normalize),
                 {"node.toml:5:1: transform[0].scale: unknown key (did you mean 'scaled'?)"});
}

TEST(Topology, DescribeGivesOneLinePerSection) {
  auto node = load_topology_file(source_dir + "/config/default.toml");
  ASSERT_TRUE(node.has_value()) << node.error().what();
  auto text = describe(*node);
  for (std::string_view line :
       {"gpus: auto", "dataset: path=build/sample/shards format=shards seed=0 shuffle=global",
        "pipeline: batch_size=64 preprocessors=auto readers=auto prefetch_batches=2",
        "batching: policy=latency_aware", "trainer: step_ms=0 epochs=1",
        "monitor: interval_ms=1000", "supervision: strategy=one_for_one", "faults: off",
        "transform: decode -> random_resized_crop 224x224 bilinear -> flip p=0.5 -> normalize"}) {
    EXPECT_NE(text.find(line), std::string::npos) << "'" << line << "' not in:\n" << text;
  }
  EXPECT_NE(text.find("normalize (cpu, float32)"), std::string::npos) << text;
  EXPECT_NE(text.find(" per_worker_limit=auto "), std::string::npos) << text;
}

// --- bad topologies ------------------------------------------------------------------------

TEST(Topology, MissingRequiredKeyNamesTheTable) {
  expect_invalid(load("[dataset]\nformat = \"folder\"\n[[transform]]\nop = \"decode\"\n"
                      "[[transform]]\nop = \"normalize\"\n"),
                 {"node.toml: dataset.path: required key is missing"});
  expect_invalid(load("[[transform]]\nop = \"decode\"\n[[transform]]\nop = \"normalize\"\n"),
                 {"node.toml: dataset.path: required key is missing"});
  expect_invalid(load("[dataset]\npath = \"/x\"\n"),
                 {"node.toml: transform: required key is missing"});
  expect_invalid(load_after("[[transform]]\nop = \"center_crop\"\n"),
                 {"node.toml: transform[2].size: required key is missing"});
}

TEST(Topology, WrongTypeSaysExpectedAndGot) {
  expect_invalid(load_with("[pipeline]\nbatch_size = \"64\"\n"),
                 {"node.toml:2:14: pipeline.batch_size: expected an integer, got a string"});
  expect_invalid(load_with("[pipeline]\nbatch_size = 64.0\n"),
                 {"node.toml:2:14: pipeline.batch_size: expected an integer, got a float"});
  expect_invalid(load_with("[trainer]\nstep_ms = \"fast\"\n"),
                 {"node.toml:2:11: trainer.step_ms: expected a number, got a string"});
  expect_invalid(load_dataset("shuffle = 1\n"),
                 {"dataset.shuffle: expected true, false, \"global\", \"blocks\" or \"none\", got "
                  "an integer"});
  expect_invalid(load_with("gpus = true\n"),
                 {"node.toml:1:8: gpus: expected \"auto\", an array of CUDA device ids"});
  expect_invalid(load_with("monitor = 3\n"),
                 {"node.toml:1:11: monitor: expected a table, got an integer"});
  expect_invalid(load("transform = 3\n[dataset]\npath = \"/x\"\n"),
                 {"transform: expected an array of tables ([[transform]]), got an integer"});
  expect_invalid(load_after("[[transform]]\nop = \"resize\"\nsize = [1, 2, 3]\n"),
                 {"transform[2].size: expected an integer or [height, width], got an array of 3"});
  expect_invalid(load_after("[[transform]]\nop = \"normalize\"\nmean = [0.5, 0.5]\n"),
                 {"transform[2].mean: expected an array of 3 numbers, got 2"});
}

TEST(Topology, UnknownOpListsTheKnownOps) {
  expect_invalid(load("[dataset]\npath = \"/x\"\n[[transform]]\nop = \"decode\"\n[[transform]]\n"
                      "op = \"blur\"\nsigma = 2\n[[transform]]\nop = \"normalize\"\n"),
                 {"node.toml:6:6: transform[1].op: unknown transform op 'blur'",
                  "decode, random_resized_crop, resize, center_crop, flip, normalize, to_uint8"});
}

TEST(Topology, OutOfRangeValuesNameTheRange) {
  expect_invalid(load_with("[pipeline]\nbatch_size = -3\n"),
                 {"node.toml:2:14: pipeline.batch_size: must be >= 1 (got -3)"});
  expect_invalid(load_with("[faults]\ncrash_reader = 1.5\n"),
                 {"node.toml:2:16: faults.crash_reader: must be in [0, 1] (got 1.5)"});
  expect_invalid(load_with("[batching]\nstraggler_percentile = 100\n"),
                 {"batching.straggler_percentile: must be in (0, 100) (got 100)"});
  expect_invalid(load_with("[supervision]\nrestart_period_s = 0\n"),
                 {"supervision.restart_period_s: must be > 0 (got 0)"});
  expect_invalid(load_with("[supervision]\nbackoff_min_ms = 50\nbackoff_max_ms = 20\n"),
                 {"node.toml:3:18: supervision.backoff_max_ms: must be >= backoff_min_ms (50)"});
  expect_invalid(load_with("[monitor]\ninterval_ms = 5\n"),
                 {"monitor.interval_ms: must be >= 10 (got 5)"});
  expect_invalid(load_with("[trainer]\nstep_ms = nan\n"),
                 {"trainer.step_ms: must be >= 0 (got nan)"});
  expect_invalid(load_with("[pipeline]\nbatch_size = 9999999999\n"),
                 {"pipeline.batch_size: must be in [1, 2147483647] (got 9999999999)"});
  expect_invalid(load_dataset("seed = -1\n"),
                 {"node.toml:3:8: dataset.seed: must be >= 0 (got -1)"});
  expect_invalid(load_after("[[transform]]\nop = \"flip\"\np = 2\n"),
                 {"transform[2].p: must be in [0, 1] (got 2)"});
  expect_invalid(load_after("[[transform]]\nop = \"center_crop\"\nsize = [0, 5]\n"),
                 {"transform[2].size[0]: must be >= 1 (got 0)"});
}

TEST(Topology, TheCacheAndTheClusterReadTheirKeys) {
  temp_dir dir;
  auto pem = (dir / "node.pem").string();
  std::ofstream(pem) << "not checked here\n";
  auto t = load_with("[cache]\nmemory = \"1G\"\ndisk = \"" + dir.path().string() +
                     "\"\ndisk_size = \"20G\"\n[cluster]\nrank = 1\nworld = 2\n"
                     "peers = [\"10.0.0.1:7100\", \"[::1]:7100\"]\npeer_timeout_ms = 250\n"
                     "peer_retry_ms = 500\npeer_wait_s = 5\ntls_certificate = \"" +
                     pem + "\"\ntls_key = \"" + pem + "\"\ntls_cafile = \"" + pem + "\"\n");
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_EQ(t->cache.memory, 1ULL << 30U);
  EXPECT_EQ(t->cache.disk_size, 20ULL << 30U);
  ASSERT_EQ(t->cluster.peers.size(), 2u);
  EXPECT_EQ(t->cluster.peers[1].host, "::1");
  EXPECT_EQ(t->cluster.peer_timeout_ms, 250);
  EXPECT_EQ(t->cluster.peer_retry_ms, 500);
  EXPECT_DOUBLE_EQ(t->cluster.peer_wait_s, 5.0);
  EXPECT_EQ(t->cluster.tls.cafile, pem);
  EXPECT_TRUE(t->cluster.tls.enabled());
}

TEST(Topology, BadCacheAndClusterKeysAreNamed) {
  expect_invalid(load_with("[cache]\ndisk_size = \"1G\"\n"),
                 {"node.toml:2:13: cache.disk_size: needs cache.disk"});
  expect_invalid(load_with("[cache]\ndisk = \"/tmp\"\n"), {"cache.disk: needs cache.disk_size"});
  expect_invalid(load_with("[cache]\nmemory = \"lots\"\n"),
                 {"cache.memory: must be a size such as \"512M\""});
  expect_invalid(load_with("[cluster]\npeers = [\"a:1\", \"b\"]\n"),
                 {"node.toml:2:17: cluster.peers[1]: \"b\" is not \"host:port\" (no port)"});
  expect_invalid(load_with("[cluster]\npeers = [\"a:1\", \"a:1\"]\n"),
                 {"cluster.peers[1]: a:1 is listed twice"});
  expect_invalid(load_with("[cluster]\npeers = \"a:1\"\n"),
                 {"cluster.peers: must be an array of \"host:port\" strings, got a string"});
  expect_invalid(load_with("[cluster]\nworld = 3\npeers = [\"a:1\", \"b:1\"]\n"),
                 {"cluster.peers: lists 2 nodes, but cluster.world = 3"});
  temp_dir dir;
  auto pem = (dir / "node.pem").string();
  std::ofstream(pem) << "x\n";
  expect_invalid(load_with("[cluster]\ntls_certificate = \"" + pem + "\"\ntls_key = \"" + pem +
                           "\"\ntls_cafile = \"/no/such.pem\"\n"),
                 {"node.toml:4:14: cluster.tls_cafile: no such file: /no/such.pem"});
  expect_invalid(load_with("[cluster]\ntls_certificate = \"" + pem + "\"\n"),
                 {"cluster: tls_certificate, tls_key and tls_cafile go together"});
  expect_invalid(load_with("[cluster]\npeer_timeout_ms = 0\n"),
                 {"cluster.peer_timeout_ms: must be >= 1 (got 0)"});
}

TEST(Topology, PlainTcpBeyondLoopbackNeedsTlsOrInsecure) {
  const std::string peers = "[cluster]\npeers = [\"127.0.0.1:7100\", \"10.0.0.2:7100\"]\n";
  expect_invalid(load_with(peers),
                 {"node.toml:2:9: cluster.peers: 10.0.0.2:7100 is not a loopback address",
                  "CAF 0.17 bounds no message size",
                  "set tls_certificate, tls_key and tls_cafile, or insecure = true"});
  auto accepted = load_with(peers + "insecure = true\n");
  ASSERT_TRUE(accepted) << accepted.error().what();
  EXPECT_TRUE(accepted->cluster.insecure);
  auto local = load_with("[cluster]\npeers = [\"127.0.0.1:1\", \"localhost:2\", \"[::1]:3\"]\n");
  ASSERT_TRUE(local) << local.error().what();
  EXPECT_FALSE(local->cluster.insecure);
}

TEST(Topology, TheSecretFileMustBePrivateAndIsNamed) {
  temp_dir dir;
  auto secret = dir / "secret";
  std::ofstream(secret) << "s3cret\n";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  auto with_secret = [&] {
    return load_with("[cluster]\nsecret_file = \"" + secret.string() + "\"\n");
  };
  auto t = with_secret();
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_EQ(t->cluster.secret_file, secret.string());
  ASSERT_EQ(::chmod(secret.c_str(), 0644), 0);
  expect_invalid(with_secret(), {"node.toml:2:15: cluster.secret_file: " + secret.string() +
                                 ": its group or others may read or write it"});
  expect_invalid(load_with("[cluster]\nsecret_file = \"/no/such/secret\"\n"),
                 {"cluster.secret_file: /no/such/secret: No such file"});
  EXPECT_TRUE(load_with("[cluster]\nsecret_file = \"\"\n"));  // none
}

TEST(Topology, TheMetricsAddressIsHostAndPortOrNothing) {
  auto t = load_with("[monitor]\nmetrics = \"127.0.0.1:9464\"\n");
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_EQ(t->monitor.metrics, "127.0.0.1:9464");
  auto none = load_with("");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->monitor.metrics, "");  // off by default
  expect_invalid(load_with("[monitor]\nmetrics = \"9464\"\n"),
                 {"node.toml:2:11: monitor.metrics: \"9464\" is not \"host:port\" (no port)"});
  expect_invalid(load_with("[monitor]\nmetrics = \"localhost:70000\"\n"),
                 {"monitor.metrics: \"localhost:70000\" is not \"host:port\"",
                  "0..65535 (0: one the system picks)"});
  auto any = load_with("[monitor]\nmetrics = \"127.0.0.1:0\"\n");  // a port the system picks
  ASSERT_TRUE(any) << any.error().what();
}

TEST(Topology, ParametersTheStepRejectsNameTheTable) {
  expect_invalid(
      load("[dataset]\npath = \"/x\"\n[[transform]]\nop = \"decode\"\n[[transform]]\n"
           "op = \"random_resized_crop\"\nsize = 8\nscale = [0.9, 0.1]\n[[transform]]\n"
           "op = \"normalize\"\n"),
      {"node.toml:5:1: transform[1]: random_resized_crop: scale must satisfy 0 < min <= max"});
}

TEST(Topology, UnknownKeysAreErrorsEverywhere) {
  expect_invalid(load_with("pipline = 3\n"),
                 {"node.toml:1:1: pipline: unknown key (did you mean 'pipeline'?)"});
  expect_invalid(load_with("[pipline]\nbatch_size = 3\n"),
                 {"node.toml:1:2: pipline: unknown key (did you mean 'pipeline'?)"});
  expect_invalid(load_with("[pipeline]\nbatch_sise = 3\n"),
                 {"node.toml:2:1: pipeline.batch_sise: unknown key (did you mean 'batch_size'?)"});
  expect_invalid(load_with("[monitor]\ncolour = \"red\"\n"),
                 {"monitor.colour: unknown key (known keys: interval_ms, metrics)"});
  expect_invalid(load_after("[[transform]]\nop = \"center_crop\"\nsise = 3\nsize = 3\n"),
                 {"node.toml:11:1: transform[2].sise: unknown key (did you mean 'size'?)"});
}

TEST(Topology, EveryDatasetFormatIsNamed) {
  for (auto format : {dataset_format::shards, dataset_format::folder, dataset_format::webdataset,
                      dataset_format::npy_pairs}) {
    auto node = load_dataset("format = \"" + std::string(to_string(format)) + "\"\n");
    ASSERT_TRUE(node) << node.error().what();
    EXPECT_EQ(node->dataset.format, format);
  }
}

TEST(Topology, MapPartsNeedsAFormatOfNamedPartsAndNoPeers) {
  auto node = load_dataset("format = \"npy_pairs\"\nmap_parts = [\"x.npy\", \"y.npy\"]\n");
  ASSERT_TRUE(node) << node.error().what();
  EXPECT_EQ(node->dataset.map_parts, (std::vector<std::string>{"x.npy", "y.npy"}));
  expect_invalid(load_dataset("map_parts = \"x.npy\"\n"), {"dataset.map_parts: expected"});
}

TEST(Topology, BadEnumValuesListTheChoices) {
  expect_invalid(
      load_with("[batching]\npolicy = \"fastest\"\n"),
      {"node.toml:2:10: batching.policy: must be one of \"in_order\", \"latency_aware\" (got "
       "\"fastest\")"});
  expect_invalid(load_dataset("format = \"zip\"\n"),
                 {"dataset.format: must be one of \"folder\", \"shards\", \"webdataset\", "
                  "\"npy_pairs\", \"librispeech\", \"python\" (got \"zip\")"});
  expect_invalid(load_with("[supervision]\nstrategy = \"all_for_one\"\n"),
                 {"supervision.strategy: must be one of \"one_for_one\""});
  expect_invalid(load_after("[[transform]]\nop = \"resize\"\nsize = 3\ninterpolation = \"x\"\n"),
                 {"transform[2].interpolation: must be one of \"nearest\", \"bilinear\""});
}

// dataset.shuffle: true, false, or a mode by name; blocks' block and span, each named when bad.
TEST(Topology, ShuffleTakesAModeAndBlocksTheirBlockAndSpan) {
  auto blocks = load_dataset("shuffle = \"blocks\"\nshuffle_block = \"16M\"\nshuffle_span = 8\n");
  ASSERT_TRUE(blocks) << blocks.error().what();
  EXPECT_EQ(blocks->dataset.shuffle, shuffle_mode::blocks);
  EXPECT_EQ(blocks->dataset.shuffle_block, 16u << 20);
  EXPECT_EQ(blocks->dataset.shuffle_span, 8u);
  auto named = load_dataset("shuffle = \"none\"\n");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->dataset.shuffle, shuffle_mode::none);
  expect_invalid(load_dataset("shuffle = \"random\"\n"),
                 {"dataset.shuffle: must be one of \"global\", \"blocks\", \"none\" (got "
                  "\"random\")"});
  expect_invalid(load_dataset("shuffle = \"blocks\"\nshuffle_block = \"0\"\n"),
                 {"dataset.shuffle_block: must be a size of 1 byte to 4G"});
  expect_invalid(
      load_dataset("shuffle = \"blocks\"\nshuffle_block = \"lots\"\n"),
      {"dataset.shuffle_block: must be a size of 1 byte to 4G, such as \"1M\" (got \"lots\")"});
  expect_invalid(load_dataset("shuffle = \"blocks\"\nshuffle_span = 0\n"),
                 {"dataset.shuffle_span: must be"});
  expect_invalid(load_dataset("shuffle = \"blocks\"\nformat = \"python\"\n"),
                 {"dataset.shuffle: \"blocks\" orders the records of files"});
}

TEST(Topology, DecodeOnSaysWhichDecoderTakesJpegs) {
  auto with_decode = [](const std::string& keys) {
    return load(std::string(dataset_table) + "[[transform]]\nop = \"decode\"\n" + keys +
                "\n[[transform]]\nop = \"normalize\"\n");
  };
  auto node = with_decode("on = \"auto\"\ngpu = 1\ngpu_lanes = 2\n");
  ASSERT_TRUE(node) << node.error().what();
  const auto& decode = std::get<decode_spec>(node->transforms.front());
  EXPECT_EQ(decode.on, decode_device::automatic);
  EXPECT_EQ(decode.gpu, 1);
  EXPECT_EQ(decode.gpu_lanes, 2);
  EXPECT_EQ(std::get<decode_spec>(load(minimal)->transforms.front()).on, decode_device::cpu);
  expect_invalid(with_decode("on = \"sometimes\"\n"),
                 {"transform[0].on: must be one of \"cpu\", \"gpu\", \"auto\" (got "
                  "\"sometimes\")"});
  expect_invalid(with_decode("gpu_lanes = 0\n"), {"transform[0].gpu_lanes: must be"});
  // This test links no GPU decoder: on = "gpu" stops start-up, naming the step and why.
  expect_invalid(with_decode("on = \"gpu\"\n"),
                 {"node.toml:",
                  "transform 0 (decode): on = \"gpu\": no GPU decoder for CUDA "
                  "device 0: this build has no CUDA"});
}

TEST(Topology, GpusMustBeDistinctAndNonNegative) {
  expect_invalid(load_with("gpus = [0, 0]\n"),
                 {"node.toml:1:12: gpus[1]: device 0 is listed twice"});
  expect_invalid(load_with("gpus = [-1]\n"), {"node.toml:1:9: gpus[0]: must be >= 0 (got -1)"});
  expect_invalid(load_with("gpus = []\n"), {"gpus: must list at least one device id"});
  expect_invalid(load_with("gpus = 0\n"), {"gpus: must be >= 1 (got 0)"});
  expect_invalid(load_with("gpus = \"all\"\n"), {"gpus: expected \"auto\"", "got \"all\""});
}

TEST(Topology, SyntaxErrorsGiveLineAndColumn) {
  auto node = load("[dataset]\npath = \"/x\"\n[pipeline]\nbatch_size = = 3\n");
  expect_invalid(node, {"node.toml:4:"});
  ASSERT_FALSE(node.has_value());
  EXPECT_GT(node.error().message().size(), std::string("node.toml:4:14: ").size());
  expect_invalid(load("[dataset]\npath = \"/x\xff\"\n"), {"node.toml:2:"});
  expect_invalid(load_topology_string("a = [", "", {}), {"<string>:1:"});
}

TEST(Topology, EmptyTransformListIsAnError) {
  expect_invalid(load("transform = []\n[dataset]\npath = \"/x\"\n"),
                 {"node.toml:1:13: transform: must list at least decode and normalize"});
}

TEST(Topology, TheChainsFieldsAreCheckedAtTheStepThatNamesThem) {
  expect_invalid(load("[dataset]\npath = \"/x\"\n[[transform]]\nop = \"normalize\"\n"
                      "[[transform]]\nop = \"decode\"\n"),
                 {"node.toml:3:1: transform[0]: transform 0 (normalize): field 'image' is not made "
                  "by any step before it"});
  expect_invalid(load("[dataset]\npath = \"/x\"\n[[transform]]\nop = \"decode\"\n"
                      "[[transform]]\nop = \"flip\"\nfields = [\"image\", \"boxes\"]\n"
                      "[[transform]]\nop = \"normalize\"\n"),
                 {"node.toml:5:1: transform[1]: transform 1 (flip): field 'boxes' is not made"});
  expect_invalid(load("[dataset]\npath = \"/x\"\n[[transform]]\nop = \"decode\"\n"
                      "[[transform]]\nop = \"flip\"\n"),
                 {"transform[1]: transform 1 (flip): field 'image' is still an image when the "
                  "chain ends"});
}

TEST(Topology, CollateNamesFieldsOfTheChain) {
  auto ok = load_after("[collate.image]\nmode = \"pad\"\nmultiple = 32\n");
  ASSERT_TRUE(ok) << ok.error().what();
  ASSERT_EQ(ok->collate.size(), 1u);
  EXPECT_EQ(ok->collate[0].first, "image");
  EXPECT_EQ(ok->collate[0].second.mode, collate_mode::pad);
  EXPECT_EQ(ok->collate[0].second.multiple, 32);
  expect_invalid(load_after("[collate.audio]\nmode = \"pad\"\n"),
                 {"collate.audio: no step makes a field 'audio' (the fields are label, image)"});
  expect_invalid(load_after("[collate.image]\nmode = \"sideways\"\n"),
                 {"collate.image.mode: must be one of \"stack\", \"pad\", \"ragged\""});
  expect_invalid(load_after("[collate.image]\nmax_shape = [3, 4]\n"),
                 {"collate.image.max_shape: needs one extent per axis of the field"});
  // Past 2^40, rounding an extent up to a multiple overflowed before the room was refused.
  expect_invalid(load_after("[collate.image]\nmode = \"pad\"\nmultiple = 4611686018427387904\n"),
                 {"collate.image.multiple"});
  expect_invalid(load_after("[collate.image]\nmax_shape = [3, 4, 2199023255552]\n"),
                 {"collate.image.max_shape"});
}

/// A chain of an audio field and an image, batched by `batching` (a [batching] table's keys).
expected<topology> load_bucketed(const std::string& batching) {
  return load("[dataset]\npath = \"/x\"\n[batching]\n" + batching +
              "[[transform]]\nop = \"decode\"\nfrom = \"flac\"\nto = \"audio\"\n"
              "[[transform]]\nop = \"decode\"\n"
              "[[transform]]\nop = \"random_resized_crop\"\nsize = 8\n"
              "[[transform]]\nop = \"normalize\"\n");
}

TEST(Topology, BucketingNamesAVaryingAxisOfAFieldOfTheChain) {
  const std::string aware = "policy = \"latency_aware\"\n";
  auto ok = load_bucketed(aware + "bucket_by = \"audio\"\nbucket_boundaries = [16000, 32000]\n");
  ASSERT_TRUE(ok) << ok.error().what();
  EXPECT_EQ(ok->batching.bucket_by, "audio");
  EXPECT_EQ(ok->batching.bucket_axis, 0);
  EXPECT_EQ(ok->batching.bucket_boundaries, (std::vector<std::int64_t>{16000, 32000}));
  EXPECT_NE(describe(*ok).find("bucket_by=audio bucket_axis=0 bucket_boundaries=[16000, 32000]"),
            std::string::npos)
      << describe(*ok);
  const std::string bounds = "bucket_boundaries = [100]\n";
  expect_invalid(load_bucketed(aware + "bucket_by = \"speech\"\n" + bounds),
                 {"node.toml:5:13: batching.bucket_by: no step makes a field 'speech' (the fields "
                  "are label, audio, image)"});
  expect_invalid(load_bucketed(aware + "bucket_by = \"audio\"\nbucket_axis = 1\n" + bounds),
                 {"batching.bucket_axis: 'audio' (float32 [?]) has no axis 1"});
  expect_invalid(load_bucketed(aware + "bucket_by = \"image\"\n" + bounds),
                 {"batching.bucket_by: 'image' (float32 [3, 8, 8]) has the same extent on axis 0 "
                  "in every sample (3)"});
  expect_invalid(load_bucketed(aware + "bucket_by = \"audio\"\nbucket_boundaries = [5, 9, 9]\n"),
                 {"batching.bucket_boundaries: must increase strictly (element 2, 9, follows 9)"});
  expect_invalid(load_bucketed(aware + "bucket_boundaries = [0]\n"),
                 {"batching.bucket_boundaries[0]: must be >= 1"});
  // Without boundaries: bucket_count (8 by default) buckets, their boundaries learned.
  auto learned = load_bucketed(aware + "bucket_by = \"audio\"\nbucket_count = 12\n");
  ASSERT_TRUE(learned) << learned.error().what();
  EXPECT_TRUE(learned->batching.bucket_boundaries.empty());
  EXPECT_EQ(learned->batching.bucket_count, 12);
  EXPECT_NE(describe(*learned).find("bucket_by=audio bucket_axis=0 bucket_count=12 learned"),
            std::string::npos)
      << describe(*learned);
  expect_invalid(load_bucketed(aware + "bucket_by = \"audio\"\nbucket_count = 1\n"),
                 {"batching.bucket_count: must be in [2, 256]"});
  expect_invalid(load_bucketed(aware + bounds), {"batching.bucket_boundaries: needs bucket_by"});
  expect_invalid(load_bucketed("bucket_by = \"audio\"\n" + bounds),
                 {"batching.bucket_by: needs policy = \"latency_aware\""});
}

TEST(Topology, BFloat16NeedsTheGpu) {
  expect_invalid(load_after("[[transform]]\nop = \"normalize\"\ndtype = \"bfloat16\"\n"),
                 {"transform[2].dtype: \"bfloat16\" needs on = \"gpu\""});
}

TEST(Topology, TheFirstProblemInTheDocumentIsReported) {
  // A typo'd table name comes before the missing key it causes.
  expect_invalid(load("[datset]\npath = \"/x\"\n[pipeline]\nbatch_size = 0\n[[transform]]\n"
                      "op = \"decode\"\n[[transform]]\nop = \"normalize\"\n"),
                 {"node.toml:1:2: datset: unknown key (did you mean 'dataset'?)"});
}

// --- overrides -----------------------------------------------------------------------------

TEST(Topology, OverridesChangeValues) {
  auto node = load(minimal, {"pipeline.batch_size=32", "batching.policy=latency_aware", "gpus=4",
                             "dataset.path=/tmp/x y", "trainer.step_ms=12.5",
                             "monitor.interval_ms = 50", "dataset.shuffle=false"});
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->pipeline.batch_size, 32);
  EXPECT_EQ(node->batching.policy, batching_policy::latency_aware);
  EXPECT_EQ(node->gpus.kind, gpu_kind::host_feeders);
  EXPECT_EQ(node->gpus.count, 4);
  EXPECT_EQ(node->dataset.path, "/tmp/x y");
  EXPECT_EQ(node->trainer.step_ms, 12.5);
  EXPECT_EQ(node->monitor.interval_ms, 50);  // [monitor] was created
  EXPECT_EQ(node->dataset.shuffle, shuffle_mode::none);
}

TEST(Topology, OverridesApplyInOrderAndTakeTomlValues) {
  auto node = load(minimal, {"gpus=[0, 2]", "dataset.path=\"quoted\"", "pipeline.batch_size=8",
                             "pipeline.batch_size=16", "supervision.quarantine_report="});
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->gpus.ids, (std::vector<int>{0, 2}));
  EXPECT_EQ(node->dataset.path, "quoted");
  EXPECT_EQ(node->pipeline.batch_size, 16);
  EXPECT_EQ(node->supervision.quarantine_report, "");
}

TEST(Topology, OverridesCanSupplyTheRequiredKey) {
  auto node = load("[[transform]]\nop = \"decode\"\n[[transform]]\nop = \"to_uint8\"\n",
                   {"dataset.path=/data/\"odd\"\\name"});
  ASSERT_TRUE(node.has_value()) << node.error().what();
  EXPECT_EQ(node->dataset.path, "/data/\"odd\"\\name");
}

TEST(Topology, InvalidOverridesAreNamed) {
  expect_invalid(load(minimal, {"pipeline.batch_size=-3"}),
                 {"--set pipeline.batch_size=-3: pipeline.batch_size: must be >= 1 (got -3)"});
  expect_invalid(load(minimal, {"pipline.batch_size=3"}),
                 {"--set pipline.batch_size=3: pipline: unknown key (did you mean 'pipeline'?)"});
  expect_invalid(load(minimal, {"pipeline.batch_sise=3"}),
                 {"--set pipeline.batch_sise=3: pipeline.batch_sise: unknown key"});
  expect_invalid(load(minimal, {"batching.policy=fastest"}),
                 {"--set batching.policy=fastest: batching.policy: must be one of"});
  expect_invalid(load(minimal, {"pipeline.batch_size"}),
                 {"--set pipeline.batch_size: expected key.path=value"});
  expect_invalid(load(minimal, {"pipeline..batch_size=3"}),
                 {"--set pipeline..batch_size=3: 'pipeline..batch_size' is not a key path"});
  expect_invalid(load(minimal, {"dataset.path.x=3"}),
                 {"--set dataset.path.x=3: 'dataset.path' is a string, not a table"});
  expect_invalid(load(minimal, {"dataset.path=\xff"}),
                 {"--set dataset.path=\xff: the value is neither a TOML value nor UTF-8 text"});
}

TEST(Topology, AFileProblemComesBeforeAnOverrideProblem) {
  expect_invalid(load_with("[pipeline]\nreaders = 0\n", {"pipeline.batch_size=-3"}),
                 {"node.toml:2:11: pipeline.readers: must be >= 1 (got 0)"});
}

TEST(Topology, ArbitraryBytesNeverThrow) {
  for (std::string_view text :
       {std::string_view("\0\0\0", 3), std::string_view("[[transform]]\n[[transform]]\n"),
        std::string_view("transform = [1, \"a\", {op = \"decode\"}]\n"),
        std::string_view("a.b.c.d = 1\n[a]\n"), std::string_view("gpus = [[0]]\n")}) {
    auto node = load(text, {"=", "a=b=c", "transform.x=1", "gpus.x=1"});
    EXPECT_FALSE(node.has_value());
  }
}

}  // namespace
}  // namespace conveyor

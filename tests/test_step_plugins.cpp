// Node plugins of user steps: real shared libraries built in tests/plugins/ against the public
// headers only. A good one registers steps that a pipeline runs like built-in ones (every
// sample once, handed off to straggler actors between steps); one of another API version, one
// without its entry point and a missing library are refused naming them, and conveyor-node
// stops with exit code 2.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <conveyor/pipeline.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "config/load_topology.hpp"
#include "core/storage/dataset_packer.hpp"
#include "core/storage/part_files.hpp"
#include "core/transforms/plugin_loader.hpp"
#include "support/node_app.hpp"
#include "support/pipeline_harness.hpp"

namespace conveyor {
namespace {

using testing::dataset_size;
using testing::temp_dir;
using testing::trainer_log;

const std::string good_plugin = TEST_STEPS_PLUGIN;

std::string plugins_table(const std::string& library) {
  return "[plugins]\nlibraries = [\"" + library + "\"]\n";
}

expected<topology> load_with_plugin(const std::string& library, const std::string& steps = "") {
  return load_topology_string(plugins_table(library) +
                                  "[dataset]\npath = \"/data/x\"\n\n"
                                  "[[transform]]\nop = \"decode\"\n\n" +
                                  steps + "[[transform]]\nop = \"normalize\"\n",
                              "node.toml");
}

/// A plugin's failure is a configuration error of the topology, naming the library.
void expect_error(const expected<topology>& result, std::initializer_list<std::string> parts) {
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::invalid_config);
  for (const auto& part : parts) {
    EXPECT_NE(result.error().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << result.error().message();
  }
}

TEST(StepPlugins, APluginsStepsAreNamedByTheTransformTables) {
  auto node = load_with_plugin(good_plugin, "[[transform]]\nop = \"invert\"\n\n");
  ASSERT_TRUE(node) << node.error().what();
  EXPECT_EQ(node->plugins.libraries, std::vector<std::string>{good_plugin});
  EXPECT_TRUE(std::holds_alternative<user_step_spec>(node->transforms.at(1)));
}

TEST(StepPlugins, AnotherApiVersionIsRefusedNamingBothBeforeAnyCall) {
  // The plugin's entry point aborts: reaching it would end this test.
  const std::string other = OTHER_API_PLUGIN;
  expect_error(load_with_plugin(other),
               {"node.toml:2:14: plugins.libraries[0]", other,
                "step API version " + std::to_string(step_api_version + 41),
                "this node has step API version " + std::to_string(step_api_version)});
}

/// Whether the library at `path` is loaded in this process (RTLD_NOLOAD loads nothing).
bool is_loaded(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle != nullptr) {
    dlclose(handle);
  }
  return handle != nullptr;
}

TEST(StepPlugins, AnotherApiVersionIsRefusedFromItsFileWithoutRunningAnyOfIt) {
  const std::string other = OTHER_API_PLUGIN;
  auto loaded = load_step_plugin(other);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message().find("built against step API version"), std::string::npos)
      << loaded.error().message();
  EXPECT_EQ(std::getenv("CONVEYOR_OTHER_API_PLUGIN_RAN"), nullptr) << "its initialisers ran";
  EXPECT_FALSE(is_loaded(other));
}

TEST(StepPlugins, APluginRefusedOnceLoadedIsUnloaded) {
  const std::string no_entry = NO_ENTRY_PLUGIN;
  auto loaded = load_step_plugin(no_entry);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message().find("no symbol 'conveyor_register_steps'"), std::string::npos)
      << loaded.error().message();
  EXPECT_FALSE(is_loaded(no_entry));
}

TEST(StepPlugins, AMissingLibraryOrSymbolIsNamed) {
  expect_error(load_with_plugin("/no/such/libsteps.so"),
               {"plugins.libraries[0]", "cannot load plugin '/no/such/libsteps.so'"});
  const std::string no_entry = NO_ENTRY_PLUGIN;
  expect_error(load_with_plugin(no_entry), {no_entry, "no symbol 'conveyor_register_steps'"});
}

TEST(StepPlugins, AMissingLibraryStopsTheNodeWithExitCodeTwo) {
  temp_dir dir;
  auto images = testing::make_image_folder(dir, 4);
  auto topology = testing::write_topology(
      dir, plugins_table("/no/such/libsteps.so") + "[dataset]\npath = \"" + images.string() +
               "\"\nformat = \"folder\"\n[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"normalize\"\n");
  auto r = testing::run_node(dir, "--topology " + topology.string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/no/such/libsteps.so"), std::string::npos) << r.err;
}

/// The plugin's steps from a loaded topology: invert (after decode) and label_plus.
std::vector<transform_spec> plugin_steps() {
  auto node = load_with_plugin(good_plugin,
                               "[[transform]]\nop = \"invert\"\n\n"
                               "[[transform]]\nop = \"label_plus\"\nadd = 0\n"
                               "to = \"label\"\n\n");
  EXPECT_TRUE(node) << node.error().what();
  return {node->transforms.at(1), node->transforms.at(2)};
}

// A 1 ns budget hands every sample off after its first step: the plugin's steps run in the
// straggler actors; each sample is delivered once, each step run once.
TEST(StepPlugins, PluginStepsAreHandedOffBetweenStepsAndEverySampleArrivesOnce) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  const std::uint64_t epochs = 2;
  auto spec = testing::make_spec(dir.path(), 2, epochs, dataset_format::shards, plugin_steps());
  spec.policy = batching_policy::latency_aware;
  spec.settings.hand_off = true;
  spec.settings.fixed_budget_ns = 1;
  spec.stragglers = 2;
  const auto steps = spec.chain.size();
  ASSERT_EQ(steps, 6u);
  trainer_log log;
  std::uint64_t handoffs = 0;
  std::uint64_t steps_run = 0;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, 2, epochs, log);
    handoffs = rt.status()->figures().handoffs;
    steps_run = rt.status()->steps_executed();
    EXPECT_FALSE(rt.status()->failure().has_value());
  }
  EXPECT_TRUE(log.problems.empty()) << log.problems.front();
  testing::expect_every_sample_once(log, epochs);
  EXPECT_GT(handoffs, 0u);
  EXPECT_EQ(steps_run, dataset_size * epochs * steps);
}

TEST(StepPlugins, TheNodeRunsAPluginStepAndDeliversEverySampleOnce) {
  temp_dir dir;
  auto images = testing::make_image_folder(dir, 23);
  auto ids = dir / "ids.txt";
  auto topology = testing::write_topology(
      dir, "gpus = 2\n" + plugins_table(good_plugin) + "[dataset]\npath = \"" + images.string() +
               "\"\nformat = \"folder\"\n[pipeline]\nbatch_size = 4\npreprocessors = 2\n"
               "[batching]\npolicy = \"latency_aware\"\nmin_budget_ms = 0\n"
               "[trainer]\nepochs = 2\nids_file = \"" +
               ids.string() +
               "\"\n[[transform]]\nop = \"decode\"\n[[transform]]\nop = \"invert\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
               "[[transform]]\nop = \"normalize\"\n");
  auto r = testing::run_node(dir, "--topology " + topology.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(ids);
  std::multiset<std::pair<int, int>> seen;
  int epoch = 0;
  int id = 0;
  while (in >> epoch >> id) {
    seen.insert({epoch, id});
  }
  ASSERT_EQ(seen.size(), 46u);
  for (int e = 0; e < 2; ++e) {
    for (int i = 0; i < 23; ++i) {
      EXPECT_EQ(seen.count({e, i}), 1u) << e << " " << i;
    }
  }
}

// examples/plugins' token_ids on records of a txt and a cls part (packed as conveyor-pack
// --parts packs key.ext files): every sample's words become the vocabulary's ids, unknown words
// `unknown`, in a ragged field of the batch.
TEST(StepPlugins, TheExamplesTokenIdsMapEveryWordThroughTheVocabulary) {
  temp_dir dir;
  const std::vector<std::string> words{"the", "cat", "sat", "on", "mat"};
  std::ofstream(dir / "vocabulary.txt") << "the\ncat\nsat\non\nmat\n";
  std::map<std::string, std::vector<std::int32_t>> expected;  // by key
  std::filesystem::create_directories(dir / "parts");
  for (int i = 0; i < 13; ++i) {
    const std::string key = "s" + std::to_string(100 + i);
    std::string text;
    for (int w = 0; w < i % 5 + 1; ++w) {  // a word out of the vocabulary every 7th
      const bool unknown = (i + w) % 7 == 3;
      text += (w == 0 ? "" : (w % 2 ? " " : "\n ")) +
              (unknown ? std::string("dog") : words[(i + w) % 5]);
      expected[key].push_back(unknown ? 99 : (i + w) % 5);
    }
    testing::write_file(dir / "parts" / (key + ".txt"),
                        std::vector<std::uint8_t>(text.begin(), text.end()));
    const std::string label = std::to_string(i % 3);
    testing::write_file(dir / "parts" / (key + ".cls"),
                        std::vector<std::uint8_t>(label.begin(), label.end()));
  }
  auto files = scan_part_files(dir / "parts");
  ASSERT_TRUE(files) << files.error().what();
  auto packed = pack_part_files(*files, dir / "shards", {});
  ASSERT_TRUE(packed) << packed.error().what();
  auto topology = testing::write_topology(
      dir, plugins_table(EXAMPLE_STEPS_PLUGIN) + "[dataset]\npath = \"" +
               (dir / "shards").string() +
               "\"\n[pipeline]\nbatch_size = 4\n[trainer]\nepochs = 1\n"
               "[[transform]]\nop = \"decode\"\nfrom = \"txt\"\nto = \"txt\"\n"
               "[[transform]]\nop = \"token_ids\"\nvocabulary = \"" +
               (dir / "vocabulary.txt").string() +
               "\"\nunknown = 99\n"
               "[collate.txt]\nmode = \"ragged\"\nmax_values = 1000\n"
               "[collate.tokens]\nmode = \"ragged\"\nmax_values = 100\n");
  auto p = pipeline::open(topology, {"gpus=1"});
  ASSERT_TRUE(p) << p.error().what();
  std::size_t checked = 0;
  for (auto& b : p->epoch(0, 0)) {
    auto tokens = b.field("tokens");
    ASSERT_TRUE(tokens.has_value());
    ASSERT_EQ(tokens->type, dtype::int32);
    ASSERT_EQ(tokens->mode, collate::ragged);
    const auto* ids = static_cast<const std::int32_t*>(tokens->data);
    for (std::size_t i = 0; i < b.size(); ++i) {
      const auto& key = b.keys()[i];
      const auto name = key.substr(key.find('s', key.rfind('/') + 1), 4);
      ASSERT_EQ(expected.count(name), 1u) << key;
      EXPECT_EQ(std::vector<std::int32_t>(ids + tokens->offsets[i], ids + tokens->offsets[i + 1]),
                expected.at(name))
          << key;
      ++checked;
    }
  }
  EXPECT_EQ(checked, expected.size());
}

}  // namespace
}  // namespace conveyor

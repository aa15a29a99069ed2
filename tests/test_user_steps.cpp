// The public step API (include/conveyor/step.hpp) with real steps registered in this process:
// the topology loader reads their tables (parameters with file:line:key, unknown keys, fields
// checked at load naming the step), and a pipeline runs them with the guarantees of built-in
// steps: a throwing step is retried then quarantined with its name, a hanging one is declared
// hung and its sample issued again, every sample exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "config/load_topology.hpp"
#include "conveyor/step.hpp"
#include "support/pipeline_harness.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::dataset_size;
using testing::temp_dir;
using testing::trainer_log;

/// Reads `field`; makes `made` of `type` (rank 1, one element) unless `made` is empty.
class declared_step final : public step {
 public:
  declared_step(step_declaration d, std::function<void(sample_view&)> body)
      : declaration_(std::move(d)), body_(std::move(body)) {}
  step_declaration declare() const override { return declaration_; }
  void apply(sample_view& s, std::mt19937_64& /*rng*/) const override { body_(s); }

 private:
  step_declaration declaration_;
  std::function<void(sample_view&)> body_;
};

/// label -> `to` = label + `add` (int32 scalar); `add` in [-10, 10].
std::unique_ptr<step> label_shift(const step_params& p) {
  auto add = static_cast<std::int32_t>(p.integer("add", 1, -10, 10));
  auto to = p.string("to", "shifted");
  return std::make_unique<declared_step>(
      step_declaration{{{"label", dtype::int32, 0}}, {{to, dtype::int32, 0}}, {}},
      [add, to](sample_view& s) {
        *s.make(to, dtype::int32, {}).data<std::int32_t>() =
            *s.read("label").data<std::int32_t>() + add;
      });
}

/// Makes "tokens" as float32 [n]: the wrong dtype for read_int_tokens.
std::unique_ptr<step> float_tokens(const step_params& /*params*/) {
  return std::make_unique<declared_step>(step_declaration{{}, {{"tokens", dtype::float32, 1}}, {}},
                                         [](sample_view&) {});
}
std::unique_ptr<step> read_int_tokens(const step_params& /*params*/) {
  return std::make_unique<declared_step>(step_declaration{{{"tokens", dtype::int32, 1}}, {}, {}},
                                         [](sample_view&) {});
}

struct registered {
  registered() {
    register_step("label_shift", label_shift);
    register_step("float_tokens", float_tokens);
    register_step("read_int_tokens", read_int_tokens);
  }
};
const registered once;

const std::string head =
    "[dataset]\npath = \"/data/x\"\n\n[[transform]]\nop = \"decode\"\n\n"
    "[[transform]]\nop = \"normalize\"\n\n";

expected<topology> load(const std::string& tail) {
  return load_topology_string(head + tail, "node.toml");
}

void expect_invalid(const expected<topology>& result,
                    std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code(), errc::invalid_config);
  for (auto part : parts) {
    EXPECT_NE(result.error().message().find(part), std::string::npos)
        << "'" << part << "' not in: " << result.error().message();
  }
}

TEST(UserStepTopology, ARegisteredStepLoadsWithItsParametersAndMakesItsField) {
  auto node = load("[[transform]]\nop = \"label_shift\"\nadd = 3\nto = \"next\"\n");
  ASSERT_TRUE(node) << node.error().what();
  ASSERT_EQ(node->transforms.size(), 3u);
  const auto* user = std::get_if<user_step_spec>(&node->transforms[2]);
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->name, "label_shift");
  auto chain = transform_chain::build(node->transforms);
  ASSERT_TRUE(chain) << chain.error().what();
  const auto* next = chain->schema().find("next");
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->type.type, dtype::int32);
  EXPECT_EQ(next->type.rank, 0);

  sample_state sample;
  sample.sample_id = 4;
  sample.key = "k";
  auto jpeg = testing::make_jpeg(16, 12, 1);
  sample.encoded.assign(jpeg.begin(), jpeg.end());
  chain->start(sample, 7);
  ASSERT_TRUE(chain->run_all(sample));
  auto fields = chain->take_fields(sample);
  ASSERT_TRUE(fields) << fields.error().what();
  EXPECT_EQ(*(*fields)[*chain->schema().index_of("next")].data<std::int32_t>(), 10);
}

TEST(UserStepTopology, ABadParameterNamesFileLineAndKey) {
  expect_invalid(load("[[transform]]\nop = \"label_shift\"\nadd = \"three\"\n"),
                 {"node.toml:12:7: transform[2].add: expected an integer"});
  expect_invalid(load("[[transform]]\nop = \"label_shift\"\nadd = 30\n"),
                 {"node.toml:12:7: transform[2].add: must be in [-10, 10] (got 30)"});
}

TEST(UserStepTopology, AnUnknownKeyOfARegisteredStepIsReported) {
  expect_invalid(load("[[transform]]\nop = \"label_shift\"\nad = 3\n"),
                 {"node.toml:12:", "transform[2].ad: unknown key for step 'label_shift'"});
}

TEST(UserStepTopology, AFieldOfTheWrongDtypeIsAConfigurationErrorNamingTheStep) {
  expect_invalid(load("[[transform]]\nop = \"float_tokens\"\n\n"
                      "[[transform]]\nop = \"read_int_tokens\"\n"),
                 {"node.toml:13:1: transform[3]", "transform 3 (read_int_tokens)",
                  "field 'tokens' is float32 [?] there (made by transform 2 (float_tokens))",
                  "reads int32 of rank 1"});
}

TEST(UserStepTopology, AnUnknownOpListsTheRegisteredSteps) {
  expect_invalid(load("[[transform]]\nop = \"label_shiftt\"\n"),
                 {"unknown transform op 'label_shiftt'", "registered steps:", "label_shift"});
}

TEST(UserStepRegistry, ABuiltInNameIsRefused) {
  EXPECT_THROW(register_step("flip", label_shift), std::invalid_argument);
}

/// A user step (reads "image", makes nothing) spliced into the harness's chain.
transform_spec spliced(const std::string& name, std::function<void(sample_view&)> body) {
  return user_step_spec{
      name, std::make_shared<declared_step>(step_declaration{{{"image", dtype::uint8, 3}}, {}, {}},
                                            std::move(body))};
}

TEST(UserStepPipeline, AThrowingStepIsRetriedThenTheSampleQuarantinedWithTheStepsName) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  auto thrower = spliced("picky", [](sample_view& s) {
    if (s.id() % 10 == 3) {
      throw std::runtime_error("no samples ending in 3");
    }
  });
  auto spec = testing::make_spec(dir.path(), 1, 1, dataset_format::shards, {thrower});
  spec.settings.max_sample_retries = 2;
  trainer_log log;
  pipeline_figures figures;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, 1, 1, log);
    figures = rt.status()->figures();
  }
  const std::uint64_t bad = 6;  // 3, 13, ..., 53 of 61
  EXPECT_EQ(log.ledger.summary(0).delivered, dataset_size - bad);
  EXPECT_EQ(figures.totals.quarantined, bad);
  EXPECT_EQ(figures.totals.lost + figures.totals.duplicates, 0u);
  EXPECT_EQ(figures.retries, bad * 2u);
  for (const auto& q : figures.quarantined) {
    EXPECT_NE(q.reason.find("step picky: no samples ending in 3"), std::string::npos) << q.reason;
    EXPECT_NE(q.reason.find("failed 3 times"), std::string::npos) << q.reason;
  }
}

/// Blocks the first attempt of sample `id` until released (the test releases it at the end,
/// so that the abandoned thread finishes before the pipeline is torn down).
class gate {
 public:
  void wait_first(std::uint64_t id, std::uint64_t blocked) {
    if (id != blocked || tripped_.exchange(true)) {
      return;
    }
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [this] { return open_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }

 private:
  std::atomic<bool> tripped_{false};
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

TEST(UserStepPipeline, AHangingStepIsDeclaredHungAndItsSampleIssuedAgain) {
  temp_dir dir;
  testing::write_jpeg_dataset(dir.path());
  auto held = std::make_shared<gate>();
  auto hanger = spliced("stuck", [held](sample_view& s) { held->wait_first(s.id(), 5); });
  auto spec = testing::make_spec(dir.path(), 1, 1, dataset_format::shards, {hanger});
  spec.supervision = {restart_strategy::one_for_one, {100000, 10000ms, 0ms, 2ms, 1}, 0ms};
  spec.supervision.hang_timeout = 100ms;
  spec.settings.max_sample_retries = 5;
  trainer_log log;
  std::uint64_t hangs = 0;
  {
    pipeline_runtime rt(std::move(spec));
    testing::run_trainers(rt, 1, 1, log);
    hangs = rt.status()->hangs();
    EXPECT_EQ(rt.status()->figures().totals.quarantined, 0u);
    held->open();
  }
  EXPECT_GT(hangs, 0u);
  testing::expect_every_sample_once(log, 1);
}

}  // namespace
}  // namespace conveyor

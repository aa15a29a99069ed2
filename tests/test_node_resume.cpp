// conveyor-node --checkpoint / --resume as operators use them: a node killed (SIGKILL) or
// stopped (Ctrl-C) mid-run and started again from its checkpoint delivers exactly the samples
// the checkpoint had not; a damaged, missing or foreign checkpoint stops start-up (exit 2).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include "conveyor/run_state.hpp"
#include "core/batching/epoch_order.hpp"
#include "core/batching/resume_state.hpp"
#include "support/node_app.hpp"

namespace conveyor {
namespace {

using testing::json_number;
using testing::node_process;
using testing::run_node;
using testing::temp_dir;

constexpr std::uint64_t images = 37;
constexpr std::uint64_t epochs = 2;
using ids_by_epoch = testing::epoch_ids;
using testing::read_ids_file;

std::filesystem::path topology(const temp_dir& dir) {
  auto folder = testing::make_image_folder(dir, static_cast<int>(images));
  return testing::write_topology(
      dir, "gpus = 4\n[dataset]\npath = \"" + folder.string() +
               "\"\nformat = \"folder\"\nseed = 3\n"
               "[pipeline]\nbatch_size = 2\nprefetch_batches = 1\npreprocessors = 2\n"
               "[batching]\npolicy = \"latency_aware\"\n"
               "[trainer]\nepochs = 2\ncheckpoint_every = 2\n[monitor]\ninterval_ms = 1000\n"
               "[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
               "[[transform]]\nop = \"to_uint8\"\n");
}

// The samples a checkpoint file says were delivered, by epoch.
ids_by_epoch checkpointed(const std::filesystem::path& file) {
  auto blob = run_state::load(file);
  EXPECT_TRUE(blob) << blob.error().what();
  auto state = decode(blob->bytes, file.string());
  EXPECT_TRUE(state) << state.error().what();
  ids_by_epoch out;
  for (std::uint64_t e = 0; e < epochs; ++e) {
    auto order = epoch_order(images, state->seed, e, state->order);
    for (std::uint64_t p = 0; p < images; ++p) {
      if (state->delivered(e, p)) {
        out[e].insert(order[p]);
      }
    }
  }
  return out;
}

// Every sample of every epoch is in `before` or `after`, and in exactly one of them.
void expect_each_sample_once(const ids_by_epoch& before, const ids_by_epoch& after) {
  for (std::uint64_t e = 0; e < epochs; ++e) {
    for (std::uint64_t id = 0; id < images; ++id) {
      auto count = [&](const ids_by_epoch& m) {
        auto it = m.find(e);
        return it == m.end() ? 0 : it->second.count(id);
      };
      EXPECT_EQ(count(before) + count(after), 1u) << "epoch " << e << " sample " << id;
    }
  }
}

// The resumed run: exit 0, every sample accounted for, its ids in `ids`.
void resume(const temp_dir& dir, const std::filesystem::path& file,
            const std::filesystem::path& ids) {
  auto r = run_node(dir, "--topology " + file.string() + " --resume " + (dir / "ck.bin").string() +
                             " --set trainer.ids_file=" + ids.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "lost"), 0u) << r.out;
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u) << r.out;
  EXPECT_NE(r.err.find("resumed from"), std::string::npos) << r.err;
}

TEST(NodeResume, AKilledNodeResumesWithExactlyWhatItsCheckpointHadNot) {
  temp_dir dir;
  auto file = topology(dir);
  auto checkpoint = dir / "ck.bin";
  {
    node_process node({"--topology", file.string(), "--checkpoint", checkpoint.string(),
                       "--log-level", "debug", "--set", "trainer.step_ms=100", "--set",
                       "trainer.ids_file=" + (dir / "ids1").string()});
    // 10 batches into the run (of 38), mid-epoch: kill it there, with no chance to clean up.
    ASSERT_TRUE(node.wait_for_log("written after 10 batches", std::chrono::seconds(120)))
        << node.err();
    node.signal(SIGKILL);
    EXPECT_EQ(node.finish(std::chrono::seconds(60)), -1);
  }
  auto saved = checkpointed(checkpoint);
  ASSERT_FALSE(saved.empty());
  resume(dir, file, dir / "ids2");
  expect_each_sample_once(saved, read_ids_file(dir / "ids2"));
  // What the killed node's trainers had received covers the checkpoint (they received more:
  // the batches after it, delivered again now).
  auto received = read_ids_file(dir / "ids1");
  for (const auto& [e, ids] : saved) {
    for (auto id : ids) {
      EXPECT_EQ(received[e].count(id), 1u) << "epoch " << e << " sample " << id;
    }
  }
}

TEST(NodeResume, CtrlCSavesTheStateAndTheResumedRunDeliversEachSampleOnce) {
  temp_dir dir;
  auto file = topology(dir);
  {
    node_process node({"--topology", file.string(), "--checkpoint", (dir / "ck.bin").string(),
                       "--log-level", "debug", "--set", "trainer.step_ms=100", "--set",
                       "trainer.ids_file=" + (dir / "ids1").string()});
    ASSERT_TRUE(node.wait_for_log("written after 6 batches", std::chrono::seconds(120)))
        << node.err();
    node.signal(SIGINT);
    EXPECT_TRUE(node.wait_for_log("goes on from here", std::chrono::seconds(120))) << node.err();
    ASSERT_EQ(node.finish(std::chrono::seconds(120)), 130) << node.err();
  }
  // The state written at the stop covers every batch the trainers received: nothing twice.
  resume(dir, file, dir / "ids2");
  expect_each_sample_once(read_ids_file(dir / "ids1"), read_ids_file(dir / "ids2"));
}

TEST(NodeResume, ADamagedMissingOrForeignCheckpointStopsStartUpWithExitTwo) {
  temp_dir dir;
  auto file = topology(dir);
  auto checkpoint = dir / "ck.bin";
  auto run = [&](const std::string& extra) {
    return run_node(dir, "--topology " + file.string() + " " + extra);
  };
  ASSERT_EQ(run("--checkpoint " + checkpoint.string()).exit_code, 0);

  auto missing = run("--resume " + (dir / "none.bin").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.bin"), std::string::npos) << missing.err;

  auto foreign = run("--resume " + checkpoint.string() + " --set dataset.seed=4");
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("dataset.seed"), std::string::npos) << foreign.err;

  auto blob = run_state::load(checkpoint);
  ASSERT_TRUE(blob);
  blob->bytes[blob->bytes.size() - 3] ^= 0x01;
  ASSERT_TRUE(blob->save(checkpoint));
  auto damaged = run("--resume " + checkpoint.string());
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_NE(damaged.err.find("--resume " + checkpoint.string()), std::string::npos) << damaged.err;
  EXPECT_NE(damaged.err.find("checksum"), std::string::npos) << damaged.err;

  blob->bytes.resize(20);
  ASSERT_TRUE(blob->save(checkpoint));
  auto truncated = run("--resume " + checkpoint.string());
  EXPECT_EQ(truncated.exit_code, 2);
  EXPECT_NE(truncated.err.find("truncated"), std::string::npos) << truncated.err;

  auto unwritable = run("--checkpoint " + (dir / "no-dir" / "ck.bin").string());
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.err.find("--checkpoint"), std::string::npos) << unwritable.err;
}

}  // namespace
}  // namespace conveyor

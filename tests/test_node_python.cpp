// The node app over a Python Dataset (dataset.format = "python", [python]): a real node
// process whose preprocessors and straggler actors lease worker processes that run the
// dataset this test writes. Every index once per epoch, the first sample's layout written for
// the loader, exceptions quarantined by index; and a topology that cannot work stops start-up
// with exit code 2 naming the key.

#include <gtest/gtest.h>

#include <set>

#include "support/app_process.hpp"
#include "support/python_workers.hpp"

namespace conveyor {
namespace {

using testing::run_app;
using testing::write_topology;

constexpr const char* datasets_py = R"(
import numpy as np


class Squares:
    def __len__(self):
        return 23

    def __getitem__(self, i):
        if i == 7:
            raise KeyError("no sample %d" % i)
        return {"x": np.full((3,), i * i, np.int32), "name": "s%d" % i}
)";

class NodePython : public ::testing::Test {
 protected:
  std::string topology(const std::string& extra = "") {
    const auto setup = testing::write_python_setup(dir_, "datasets", datasets_py, "Squares");
    return "gpus = 2\n[dataset]\npath = \"" + setup.string() +
           "\"\nformat = \"python\"\nseed = 3\n"
           "[python]\nlength = 23\ninterpreter = \"/usr/bin/python3\"\nworker = \"" +
           testing::python_worker_script() + "\"\nlayout_file = \"" +
           (dir_ / "layout.json").string() +
           "\"\n[pipeline]\nbatch_size = 4\npreprocessors = 2\nstragglers = 1\n"
           "[supervision]\nmax_sample_retries = 1\n[monitor]\ninterval_ms = 1000\n"
           "[trainer]\nepochs = 2\nids_file = \"" +
           (dir_ / "ids.txt").string() + "\"\n" + extra;
  }

  testing::run_result run(const std::string& text) {
    return run_app(CONVEYOR_NODE_BIN, dir_, "--topology " + write_topology(dir_, text).string());
  }

  testing::temp_dir dir_;
};

TEST_F(NodePython, EveryIndexOncePerEpochTheBadOneQuarantinedAndTheLayoutWritten) {
  auto r = run(topology());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto seen = testing::read_ids_file(dir_ / "ids.txt");
  ASSERT_EQ(seen.size(), 2u);
  for (std::uint64_t e = 0; e < 2; ++e) {
    std::multiset<std::uint64_t> want;
    for (std::uint64_t i = 0; i < 23; ++i) {
      if (i != 7) {
        want.insert(i);
      }
    }
    EXPECT_EQ(seen[e], want) << e;
  }
  EXPECT_EQ(testing::json_number(r.out, "quarantined"), 2u);
  EXPECT_EQ(testing::json_number(r.out, "lost"), 0u);
  EXPECT_NE(r.err.find("dataset[7] raised KeyError"), std::string::npos) << r.err;
  const auto layout = testing::slurp(dir_ / "layout.json");
  EXPECT_NE(layout.find("\"sample.x\""), std::string::npos) << layout;
  EXPECT_NE(layout.find("\"sample.name\""), std::string::npos) << layout;
  EXPECT_NE(layout.find("\"dict\""), std::string::npos) << layout;
}

// A trainer's sampler's order (python.order_file): each position once per epoch, the bad
// index quarantined wherever it stands and named by its index.
TEST_F(NodePython, InASamplersOrderEachPositionOnceAndTheBadIndexNamedWhereverItStands) {
  const auto write_order = [&](const std::vector<std::uint64_t>& indices) {
    testing::write_file(dir_ / "epoch.order", testing::sampler_order_bytes(indices));
  };
  write_order({2, 7, 2, 22, 0, 7});
  const auto keys = "order_file = \"" + (dir_ / "epoch.order").string() + "\"\n";
  const auto ordered = [&](const std::string& shuffle) {
    auto text = topology();
    text.insert(text.find("length = 23\n"), keys);
    text.replace(text.find("seed = 3\n"), 9, "seed = 3\nshuffle = " + shuffle + "\n");
    return text;
  };
  auto r = run(ordered("false"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto seen = testing::read_ids_file(dir_ / "ids.txt");
  ASSERT_EQ(seen.size(), 2u);
  for (std::uint64_t e = 0; e < 2; ++e) {
    EXPECT_EQ(seen[e], (std::multiset<std::uint64_t>{0, 2, 3, 4})) << e;  // positions
  }
  EXPECT_EQ(testing::json_number(r.out, "quarantined"), 4u);  // positions 1 and 5, twice
  EXPECT_NE(r.err.find("dataset[7] raised KeyError"), std::string::npos) << r.err;

  r = run(ordered("true"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("python.order_file: is the order the trainer's sampler gave"),
            std::string::npos)
      << r.err;
  // A bad index first is quarantined in its turn (the layout is the next sample's); an order of
  // bad ones alone stops the start naming the first.
  write_order({7, 2, 0});
  r = run(ordered("false"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::json_number(r.out, "quarantined"), 2u);
  write_order({7, 7});
  r = run(ordered("false"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the first sample: dataset[7] raised KeyError"), std::string::npos) << r.err;
  write_order({2, 7, 2, 23, 0, 7});
  r = run(ordered("false"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("python.order_file: " + (dir_ / "epoch.order").string() +
                       ": position 3 holds 23, past the dataset"),
            std::string::npos)
      << r.err;
}

TEST_F(NodePython, ATopologyThatCannotWorkStopsStartUpNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[[transform]]\nop = \"decode\"\n", "transform"},
      {"[collate.x]\nmode = \"pad\"\n", "collate"},
  };
  for (const auto& [extra, key] : cases) {
    auto r = run(topology(extra));
    EXPECT_EQ(r.exit_code, 2) << key << ": " << r.err;
    EXPECT_NE(r.err.find(key), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("dataset.format = \"python\""), std::string::npos) << r.err;
  }
  // A zygote the node's starter forked: both descriptors, open and of their kinds.
  for (const auto& [keys, said] : std::vector<std::pair<std::string, std::string>>{
           {"zygote_socket = 900\n", "python.zygote_socket: needs python.zygote_pidfd"},
           {"zygote_socket = 900\nzygote_pidfd = 901\n",
            "python.zygote_socket: descriptor 900 is not open"}}) {
    auto text = topology();
    text.insert(text.find("length = 23\n"), keys);
    auto r = run(text);
    EXPECT_EQ(r.exit_code, 2) << keys << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
  }
  auto text = topology();
  text.replace(text.find("worker = \""), 10, "worker = \"/nonexistent/");
  auto r = run(text);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("dataset.path"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace conveyor

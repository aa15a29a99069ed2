// A serving node against hostile local processes, as an attacker on the same machine would go
// at it: hand-written clients of the wire protocol (support/wire_client.hpp) beside honest
// trainer processes, the real node binary, real sockets and shared memory. Each test is one
// finding of issue 28 that held before the fix; every honest sample must still arrive exactly
// once. Every wait is bounded (a client's timeout, a deadline on a process's exit); nothing
// sleeps.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <conveyor/client.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/batching/resume_state.hpp"
#include "support/app_process.hpp"
#include "support/serving_node.hpp"
#include "support/wire_client.hpp"

namespace conveyor {
namespace {

using namespace testing;
using namespace std::chrono_literals;

constexpr int images = 16;

std::string socket_of(const temp_dir& dir) {
  return (dir / "node.sock").string();
}

// The honest job: rank `rank` of job `job` takes every batch of every epoch.
child honest(const temp_dir& dir, int rank, int job) {
  auto socket = socket_of(dir);
  return spawn_client([socket, rank, job](int) { return consume_all(socket, rank, job); });
}

// Every sample exactly once per epoch across `ranks` honest ranks of job `job`.
void expect_honest_job_complete(const temp_dir& dir, int ranks, int job, int epochs) {
  epoch_ids all;
  std::vector<child> clients;
  for (int r = 0; r < ranks; ++r) {
    clients.push_back(honest(dir, r, job));
  }
  for (auto& c : clients) {
    merge_into(all, parse_ids(c.collect()));
  }
  expect_each_sample_once(all, images, epochs);
}

// A resume state of the run of `dataset_size` samples seeded `seed` over `epochs` epochs,
// having delivered the first `delivered` positions of epoch 0.
std::vector<std::uint8_t> state_blob(std::uint64_t dataset_size, std::uint64_t seed,
                                     std::uint64_t epochs, std::uint64_t delivered,
                                     std::uint64_t first_epoch = 0) {
  resume_state s{dataset_size, seed, sample_order::shuffled(true), epochs, first_epoch, {}};
  if (first_epoch < epochs) {
    delivered_set d(dataset_size);
    for (std::uint64_t p = 0; p < delivered; ++p) {
      d.add(p);
    }
    s.begun.push_back(std::move(d));
  }
  return encode(s);
}

// Attaches as (job, rank) with `state` in a sealed memfd; the node's failure text, if any.
std::string attach_with_state(const std::string& socket, std::uint32_t job, std::uint32_t rank,
                              const std::vector<std::uint8_t>& state) {
  wire_client c(socket);
  auto fd = sealed_memfd(state);
  c.send(serve::attach{job, rank, static_cast<std::uint32_t>(state.size())}, fd.get());
  return c.failure_text();
}

// --- 1: descriptors --------------------------------------------------------------------------

TEST(ServingHostile, DescriptorsAMessageDoesNotTakeAreClosed) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1));
  wire_client first(socket_of(dir));
  ASSERT_TRUE(first.connected());
  const int before = open_descriptors(node.pid);
  ASSERT_GT(before, 0);
  for (int i = 0; i < 150; ++i) {
    wire_client c(socket_of(dir));
    // Two descriptors fit a one-descriptor control buffer whole; three are cut.
    c.send_bytes(serve::encode(serve::ask_report{}), 2 + i % 2);
    auto why = c.failure_text();
    EXPECT_NE(why.find("descriptors"), std::string::npos) << why;
  }
  {
    wire_client c(socket_of(dir));  // an attach takes one descriptor, not two
    c.send_bytes(serve::encode(serve::attach{0, 0, 0}), 2);
    EXPECT_NE(c.failure_text().find("came with 2 descriptors"), std::string::npos);
  }
  EXPECT_LE(open_descriptors(node.pid), before + 8) << "descriptors leaked";
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

TEST(ServingHostile, ANodeOutOfDescriptorsSaysSoBacksOffAndRecovers) {
#if defined(__SANITIZE_ADDRESS__)
  // UBSan's vptr check probes an object's memory through a pipe (sanitizer_common's
  // IsAccessibleMemoryRange): in a node out of descriptors the pipe cannot be made and the
  // check reports a valid object as "invalid vptr", ending the node. No runtime option or
  // suppression turns that probe off, so this test runs in the ci build only.
  GTEST_SKIP() << "a node out of descriptors defeats UBSan's vptr check (see the comment)";
#endif
  temp_dir dir;
  // serve.resume: the pipeline (and its reads) waits for the honest client, after the flood.
  auto file = serving_topology(dir, 1, 1, images, 1,
                               "resume = true\nmax_sessions = 1000\nattach_timeout_s = 2");
  // 48 descriptors: the node's own take some (how many depends on the libraries it maps and
  // what it inherits), idle connections the rest. 60 connections run it out whatever its own
  // need, and those it cannot accept still fit the listen backlog (64), so no connect blocks.
  constexpr int limit = 48;
  app_process node("/usr/bin/prlimit",
                   {"--nofile=" + std::to_string(limit) + ":" + std::to_string(limit),
                    CONVEYOR_NODE_BIN, "--topology", file});
  ASSERT_TRUE(node.wait_for_log("serving 1 ranks", 60s)) << node.err();
  const int own = open_descriptors(node.pid());
  std::vector<wire_client> flood;
  for (int i = 0; i < 60; ++i) {
    flood.emplace_back(socket_of(dir));
  }
  ASSERT_TRUE(node.wait_for_log("not accepting clients", 60s))
      << "the node held " << own << " descriptors before the flood\n"
      << node.err();
  flood.clear();  // the node closes what it accepted after attach_timeout_s anyway
  auto out = consume_all(socket_of(dir), 0, 0);
  expect_each_sample_once(parse_ids(out), images, 1);
  EXPECT_EQ(node.finish(60s), 0) << node.err();
}

// --- 2 and 3: resume states ------------------------------------------------------------------

TEST(ServingHostile, AStateClaimingAHugeDatasetIsRefusedAtOnceNotWalked) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1, "resume = true"));
  // 101 bytes that claim 2^62 samples: the node once walked them all before any check.
  auto huge = state_blob(std::uint64_t{1} << 62, 0, 1, 0);
  EXPECT_EQ(huge.size(), 101u);
  auto why = attach_with_state(socket_of(dir), 0, 0, huge);
  EXPECT_NE(why.find("dataset size is 4611686018427387904"), std::string::npos) << why;
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

TEST(ServingHostile, AStateOfAnotherRunRefusesItsOwnClientAlone) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 2, 1, images, 1, "resume = true"));
  auto why = attach_with_state(socket_of(dir), 0, 0, state_blob(images, 99, 1, 4));
  EXPECT_NE(why.find("seed"), std::string::npos) << why;
  expect_honest_job_complete(dir, 2, 0, 1);  // the node starts for the honest ranks
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

// Rank 0 of job `job` takes `batches` batches and saves its state to `file`.
child take_and_save(const temp_dir& dir, int job, int batches, const std::filesystem::path& file) {
  auto socket = socket_of(dir);
  return spawn_client([=](int) -> std::string {
    auto feed = client::attach(socket, 0, job, patient());
    if (!feed) {
      return "error " + feed.error().what() + "\n";
    }
    std::ostringstream out;
    for (int i = 0; i < batches; ++i) {
      auto b = feed->next();
      if (!b) {
        return "error " + b.error().what() + "\n";
      }
      for (auto id : b->sample_ids()) {
        out << b->epoch() << " " << id << "\n";
      }
    }
    auto state = feed->state();
    if (!state || !state->save(file)) {
      return "error no state\n";
    }
    return out.str();
  });
}

std::string with_resume(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  auto out =
      std::regex_replace(text.str(), std::regex("\n\\[serve\\]\n"), "\n[serve]\nresume = true\n");
  std::ofstream(file) << out;
  return file;
}

TEST(ServingHostile, ANodeThatSignsStatesRefusesAForgedOneAndResumesFromItsOwn) {
  temp_dir dir;
  auto key = dir / "state.key";
  auto file = serving_topology(dir, 1, 1, images, 1, "state_key_file = \"" + key.string() + "\"");
  std::string before;
  {
    auto node = start_node(dir, file);
    before = take_and_save(dir, 0, 2, dir / "rank0.state").collect();
    ::kill(node.pid, SIGKILL);
    node.wait(60000);
  }
  struct stat st {};
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto node = start_node(dir, with_resume(file));
  // A forged state that says epoch 0 was delivered whole: every job would get nothing.
  auto why = attach_with_state(socket_of(dir), 0, 0, state_blob(images, 0, 1, 0, 1));
  EXPECT_NE(why.find("not signed by this node's key"), std::string::npos) << why;
  auto genuine = read_file(dir / "rank0.state");
  auto options = patient();
  options.resume = run_state{genuine};
  auto after = consume_all(socket_of(dir), 0, 0, options);
  auto seen = parse_ids(before);
  merge_into(seen, parse_ids(after));
  expect_each_sample_once(seen, images, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

TEST(ServingHostile, JobsThatCheckpointedAtDifferentPointsAreRefusedNotShortchanged) {
  temp_dir dir;
  auto file = serving_topology(dir, 1, 2, images, 1);
  {
    auto node = start_node(dir, file);
    auto job1 = take_and_save(dir, 1, 1, dir / "job1.state");
    auto job0 = take_and_save(dir, 0, 3, dir / "job0.state");
    job1.collect();
    job0.collect();
    ::kill(node.pid, SIGKILL);
    node.wait(60000);
  }
  auto node = start_node(dir, with_resume(file));
  auto rest = [&](int job) {
    auto socket = socket_of(dir);
    auto state = read_file(dir / ("job" + std::to_string(job) + ".state"));
    return spawn_client([=](int) {
      auto options = patient();
      options.resume = run_state{state};
      return consume_all(socket, 0, job, options);
    });
  };
  auto job0 = rest(0);
  auto job1 = rest(1);
  auto said0 = job0.collect();
  auto said1 = job1.collect();
  EXPECT_NE(said0.find("different points"), std::string::npos) << said0;
  EXPECT_NE(said1.find("different points"), std::string::npos) << said1;
  EXPECT_EQ(node.wait(60000), 2) << node_story(dir);
  EXPECT_EQ(json_field(file_text(dir, "node.out"), "complete"), "false");
}

// --- 4: memory while a resume node waits -----------------------------------------------------

TEST(ServingHostile, OneWaitingSessionPerRankAndNoStateBeyondWhatTheRunAllows) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 2, 1, images, 1, "resume = true"));
  std::optional<wire_client> waiting(socket_of(dir));
  ASSERT_TRUE(waiting->send(serve::attach{0, 0, 0}));
  // The baseline of this build, once a refused state has been handled (a sanitizer build's
  // node is larger): one 64 MiB state read into memory would pass it by more than the margin,
  // the eight of them by 512 MiB.
  ASSERT_NE(attach_with_state(socket_of(dir), 0, 0, state_blob(images, 0, 1, 0))
                .find("waits for the start already"),
            std::string::npos);
  const double before = peak_rss_mib(node.pid);
  std::vector<std::uint8_t> big(64U << 20, 7);  // 64 MiB
  for (int i = 0; i < 8; ++i) {
    auto why = attach_with_state(socket_of(dir), 0, 1, big);
    EXPECT_NE(why.find("more than the"), std::string::npos) << why;
    why = attach_with_state(socket_of(dir), 0, 0, state_blob(images, 0, 1, 0));
    EXPECT_NE(why.find("waits for the start already"), std::string::npos) << why;
  }
  EXPECT_LT(peak_rss_mib(node.pid), before + 48.0) << "states were read into memory";
  waiting.reset();  // the first one leaves: honest ranks take over
  expect_honest_job_complete(dir, 2, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

// --- 5: clients that do not read -------------------------------------------------------------

TEST(ServingHostile, AClientThatDoesNotReadIsDroppedAndReportsNeedAnAttach) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 2, images, 2));
  {
    wire_client early(socket_of(dir));
    early.send(serve::ask_report{});
    EXPECT_NE(early.failure_text().find("report asked before attach"), std::string::npos);
  }
  wire_client flooder(socket_of(dir));
  ASSERT_TRUE(flooder.send(serve::attach{0, 0, 0}));
  for (int i = 0; i < 20000 && flooder.send(serve::ask_report{}); ++i) {
  }
  EXPECT_TRUE(flooder.closed_by_node());
  auto job1 = honest(dir, 0, 1);
  auto job0 = honest(dir, 0, 0);  // takes the batches the flooder left
  expect_each_sample_once(parse_ids(job0.collect()), images, 2);
  expect_each_sample_once(parse_ids(job1.collect()), images, 2);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  EXPECT_EQ(json_field(file_text(dir, "node.out"), "slow_clients"), "1") << node_story(dir);
  EXPECT_NE(file_text(dir, "node.err").find("does not read what the node sends"),
            std::string::npos);
}

// --- 6: the socket path ----------------------------------------------------------------------

TEST(ServingHostile, ASocketAnotherNodeListensOnIsNotTaken) {
  temp_dir dir;
  auto file = serving_topology(dir, 1, 1, images, 1);
  auto first = start_node(dir, file);
  wire_client probe(socket_of(dir));  // the first node listens
  ASSERT_TRUE(probe.connected());
  temp_dir other;
  auto second = run_app(CONVEYOR_NODE_BIN, other, "--topology " + file);
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find("listens on " + socket_of(dir) + " already"), std::string::npos)
      << second.err;
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(first.wait(60000), 0) << node_story(dir);
}

TEST(ServingHostile, ANodeRemovesOnlyItsOwnSocketFile) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1));
  auto path = socket_of(dir);
  wire_client probe(path);
  ASSERT_TRUE(probe.connected());
  auto moved = (dir / "moved.sock").string();
  ASSERT_EQ(::rename(path.c_str(), moved.c_str()), 0);
  // Another process binds the path the node bound.
  unique_fd other(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(other.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  struct stat ours {};
  ASSERT_EQ(::stat(path.c_str(), &ours), 0);
  auto out = consume_all(moved, 0, 0);
  expect_each_sample_once(parse_ids(out), images, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0) << "the node removed a socket that was not its own";
  EXPECT_EQ(after.st_ino, ours.st_ino);
}

// --- 9: sessions, names, logs ----------------------------------------------------------------

TEST(ServingHostile, SessionsThatNeverAttachAreClosedAndCapped) {
  temp_dir dir;
  auto node = start_node(
      dir, serving_topology(dir, 1, 1, images, 1, "max_sessions = 2\nattach_timeout_s = 1"));
  wire_client oldest(socket_of(dir));
  wire_client idle(socket_of(dir));
  ASSERT_TRUE(idle.connected());
  wire_client newest(socket_of(dir));
  EXPECT_NE(oldest.failure_text().find("to make room"), std::string::npos);
  EXPECT_NE(idle.failure_text().find("no attach within serve.attach_timeout_s"), std::string::npos);
  EXPECT_TRUE(newest.closed_by_node());
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

TEST(ServingHostile, BadMessagesAreRefusedNamingWhatIsWrongAndLogged) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1));
  auto refused = [&](const std::vector<std::uint8_t>& bytes) {
    wire_client c(socket_of(dir));
    c.send_bytes(bytes);
    return c.failure_text();
  };
  EXPECT_NE(refused(serve::encode(serve::attach{0xffffffffU, 0, 0}))
                .find("job 4294967295 is not one of the 1 jobs"),
            std::string::npos);
  auto reserved = serve::encode(serve::release{0});
  reserved[7] = 1;
  EXPECT_NE(refused(reserved).find("reserved header byte is 1"), std::string::npos);
  EXPECT_NE(refused(std::vector<std::uint8_t>(2000, 0)).find("longer than 1024 bytes"),
            std::string::npos);
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  const auto log = file_text(dir, "node.err");
  EXPECT_NE(log.find("longer than 1024 bytes"), std::string::npos) << log;
  EXPECT_NE(log.find("job 4294967295"), std::string::npos) << log;
}

// Attaches as rank 0 of job 0 and waits for `batches` batches; their slots.
std::vector<std::uint32_t> attach_and_take(wire_client& c, std::size_t batches) {
  c.send(serve::attach{0, 0, 0});
  std::vector<std::uint32_t> slots;
  while (slots.size() < batches) {
    auto m = c.receive();
    if (!m) {
      break;
    }
    if (const auto* b = std::get_if<serve::batch_ready>(&*m)) {
      slots.push_back(b->slot);
    }
  }
  return slots;
}

// A client's wait goes to /metrics (conveyor_client_wait_seconds_total): one that goes back,
// or is longer than the client has been attached, is refused, naming it, and its batches go to
// the next client of its rank.
TEST(ServingHostile, AReleaseSayingAWaitThatCannotBeIsRefused) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1));
  {
    wire_client backwards(socket_of(dir));
    const auto slots = attach_and_take(backwards, 2);
    ASSERT_EQ(slots.size(), 2u);
    backwards.send(serve::release{slots[0], 1000});  // 1 us: less than its time attached
    backwards.send(serve::release{slots[1], 10});
    EXPECT_NE(backwards.failure_text().find("says its trainer waited 10 ns since it attached"),
              std::string::npos);
  }
  {
    wire_client too_long(socket_of(dir));
    const auto slots = attach_and_take(too_long, 1);
    ASSERT_EQ(slots.size(), 1u);
    too_long.send(serve::release{slots[0], 3'600'000'000'000});  // an hour
    EXPECT_NE(too_long.failure_text().find("says its trainer waited 3600000000000 ns"),
              std::string::npos);
  }
  // The first client took (released) one batch; the rest, the one it held among them, go to
  // the honest client, each sample once; the node's ledger balances (exit 0).
  const auto got = parse_ids(honest(dir, 0, 0).collect());
  ASSERT_EQ(got.size(), 1u);
  const auto& ids = got.begin()->second;
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(images - 4));
  EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
  const auto log = file_text(dir, "node.err");
  EXPECT_NE(log.find("its last release said 1000 ns"), std::string::npos) << log;
}

TEST(ServingHostile, AClientTrustsOnlyANodeOfTheExpectedUser) {
  temp_dir dir;
  auto node = start_node(dir, serving_topology(dir, 1, 1, images, 1));
  auto options = patient();
  options.expected_uid = ::geteuid() + 1;
  auto squatted = client::attach(socket_of(dir), 0, 0, options);
  ASSERT_FALSE(squatted);
  EXPECT_EQ(squatted.error().code(), errc::permission_denied);
  EXPECT_NE(squatted.error().message().find(socket_of(dir)), std::string::npos);
  expect_honest_job_complete(dir, 1, 0, 1);
  EXPECT_EQ(node.wait(60000), 0) << node_story(dir);
}

}  // namespace
}  // namespace conveyor

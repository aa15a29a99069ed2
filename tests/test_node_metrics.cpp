// conveyor-node with [monitor] metrics, watched as an operator's Prometheus would: the real
// binary, a real HTTP client, the text parsed by Prometheus' own Python client. Every actor of
// the log is on /metrics, the delivered count rises from scrape to scrape, and an address the
// node cannot take stops start-up with exit code 2 naming it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>

#include <conveyor/client.hpp>

#include "core/base/unique_fd.hpp"
#include "support/node_app.hpp"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::free_tcp_ports;
using testing::make_image_folder;
using testing::node_process;
using testing::run_app;
using testing::run_node;
using testing::temp_dir;
using testing::write_topology;

std::string topology_text(const std::filesystem::path& images, std::uint16_t port) {
  return "gpus = 2\n[dataset]\npath = \"" + images.string() +
         "\"\nformat = \"folder\"\n"
         "[pipeline]\nbatch_size = 4\npreprocessors = 2\n"
         "[trainer]\nepochs = 1000\nstep_ms = 20\n"
         "[monitor]\ninterval_ms = 50\nmetrics = \"127.0.0.1:" +
         std::to_string(port) +
         "\"\n"
         "[[transform]]\nop = \"decode\"\n"
         "[[transform]]\nop = \"random_resized_crop\"\nsize = 32\n"
         "[[transform]]\nop = \"normalize\"\n";
}

// The value of the unlabelled sample `name` in an exposition; -1 when absent.
double sample(const std::string& text, const std::string& name) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("\n" + name + " ([0-9.e+-]+)\n"))) {
    return std::stod(m[1]);
  }
  return -1;
}

// The actors the node's log names in its monitor lines.
std::set<std::string> logged_actors(const std::string& log) {
  std::set<std::string> out;
  const std::regex line(R"(\[monitor\] (\S+)\s+mailbox=)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// Every one of `parts` is in `text`.
void expect_all_in(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

// Waits until every actor of the topology above has reported (its monitor line logged, so it
// is on /metrics: the monitor keeps a report before it logs it).
void wait_for_every_actor(node_process& node) {
  for (const char* name :
       {"batcher", "preprocessor-0", "preprocessor-1", "feeder-0", "feeder-1", "reader-0"}) {
    ASSERT_TRUE(node.wait_for_log(std::string("[monitor] ") + name + " ", 120s)) << node.err();
  }
}

// Ctrl-C: the node stops its endless run, exit code 130.
void stop_with_ctrl_c(node_process& node) {
  node.signal(SIGINT);
  EXPECT_EQ(node.finish(120s), 130) << node.err();
}

TEST(NodeMetrics, AScrapeParsesNamesEveryActorAndTheDeliveredCountRises) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  const auto port = free_tcp_ports(1).at(0);
  node_process node({"--topology", write_topology(dir, topology_text(images, port)).string()});
  ASSERT_TRUE(
      node.wait_for_log("metrics: http://127.0.0.1:" + std::to_string(port) + "/metrics", 120s))
      << node.err();
  wait_for_every_actor(node);
  httplib::Client client("127.0.0.1", port);
  auto first = client.Get("/metrics");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  const double delivered = sample(first->body, "conveyor_samples_delivered_total");
  ASSERT_GE(delivered, 0) << first->body;
  // Scrape until the count moves (a batch every 20 ms): bounded by a deadline, not a sleep.
  // The log as it was before the scrape: every actor in it has reported before the scrape.
  std::string later;
  std::string log_before;
  for (const auto deadline = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < deadline;) {
    log_before = node.err();
    auto r = client.Get("/metrics");
    ASSERT_TRUE(r);
    if (sample(r->body, "conveyor_samples_delivered_total") > delivered) {
      later = r->body;
      break;
    }
  }
  ASSERT_FALSE(later.empty()) << "the delivered count never rose past " << delivered;
  std::ofstream(dir / "metrics.txt") << later;
  auto parsed = run_app(CONVEYOR_PYTHON, dir,
                        std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/parse_metrics.py " +
                            (dir / "metrics.txt").string());
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err << "\n" << later;
  const auto actors = logged_actors(log_before);
  EXPECT_GE(actors.size(), 6u);  // the batcher, 2 feeders, 2 preprocessors, a reader at least
  for (const auto& actor : actors) {
    EXPECT_NE(parsed.out.find("gauge conveyor_actor_mailbox_messages actor=" + actor + " "),
              std::string::npos)
        << actor;
  }
  expect_all_in(
      parsed.out,
      {"histogram conveyor_actor_item_duration_seconds_bucket actor=batcher,le=+Inf ",
       "histogram conveyor_actor_item_duration_seconds_count actor=preprocessor-0 ",
       "counter conveyor_trainer_wait_seconds_total gpu=0 ",
       "gauge conveyor_feeder_free_slots actor=feeder-1 ",
       "gauge conveyor_batcher_window_samples actor=batcher ",
       "counter conveyor_trainer_wait_seconds_total gpu=1 ",
       "counter conveyor_bottleneck_seconds_total class=prep ",
       "counter conveyor_reads_total source=storage ", "gauge process_resident_memory_bytes  ",
       "counter process_cpu_seconds_total  ", "gauge conveyor_samples_in_flight  "});
  stop_with_ctrl_c(node);
}

// The live page in a real browser (tests/python/watch_page.py: headless Chromium over its
// DevTools protocol): every actor of the log drawn in its stage, both trainers, the diagnosis,
// and the delivered count rising while the page redraws itself. CONVEYOR_PAGE_SCREENSHOT, when
// set, is where the page's screenshot goes too (README's picture).
TEST(NodeMetrics, TheLivePageInARealBrowserShowsEveryActorAndARisingCount) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  const auto port = free_tcp_ports(1).at(0);
  node_process node({"--topology", write_topology(dir, topology_text(images, port)).string()});
  const auto url = "http://127.0.0.1:" + std::to_string(port) + "/";
  ASSERT_TRUE(node.wait_for_log("metrics: " + url + "metrics", 120s)) << node.err();
  wait_for_every_actor(node);
  const auto before = node.err();  // every actor in it is in the page's every poll
  const auto shot = dir / "page.png";
  auto watched = run_app(CONVEYOR_PYTHON, dir,
                         std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/watch_page.py " + url +
                             " " + shot.string() + " 4 90");
  ASSERT_EQ(watched.exit_code, 0) << watched.err << watched.out;
  EXPECT_GT(std::filesystem::file_size(shot), 10000u);  // a drawn page, not a blank one
  if (const char* keep = std::getenv("CONVEYOR_PAGE_SCREENSHOT")) {
    std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);
  }
  const auto& shown = watched.out;
  for (const auto& actor : logged_actors(before)) {
    EXPECT_NE(shown.find("\"" + actor + "\""), std::string::npos) << actor << "\n" << shown;
  }
  expect_all_in(shown, {"\"trainer-0\"", "\"trainer-1\"", "\"preprocessor\",\"batcher\"",
                        "\"feeder\",\"trainer\"", "\"diagnosis\":\"now ", "\"status\":\"live\""});
  stop_with_ctrl_c(node);
}

// The value of the sample `name{labels}` in an exposition; -1 when absent.
double labelled(const std::string& text, const std::string& name, const std::string& labels) {
  return sample(text, name + "\\{" + labels + "\\}");
}

// A served node's trainer processes each have their own wait on /metrics and on the page's
// document: two jobs' clients of rank 0 in this process, taking and releasing batches (each
// release says the client's time in next() so far) until both waits are on /metrics.
TEST(NodeMetrics, AServedNodesTrainerProcessesEachHaveTheirWait) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  const auto port = free_tcp_ports(1).at(0);
  const auto socket = dir / "node.sock";
  node_process node({"--topology",
                     write_topology(dir, topology_text(images, port) + "[serve]\nsocket = \"" +
                                             socket.string() + "\"\njobs = 2\n")
                         .string(),
                     "--set", "gpus=1"});
  const auto attached_at = std::chrono::steady_clock::now();
  client_options options;
  options.attach_timeout_s = 120;
  std::vector<client> trainers;
  for (int job = 0; job < 2; ++job) {
    auto c = client::attach(socket, 0, job, options);
    ASSERT_TRUE(c) << c.error().what() << node.err();
    trainers.push_back(std::move(*c));
  }
  ASSERT_TRUE(node.wait_for_log("metrics: http://", 120s)) << node.err();
  httplib::Client http("127.0.0.1", port);
  const char* waits[] = {"job=\"0\",rank=\"0\"", "job=\"1\",rank=\"0\""};
  std::string text;
  for (const auto deadline = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < deadline;) {
    for (auto& t : trainers) {
      auto b = t.next();
      ASSERT_TRUE(b) << b.error().what();
      b->release();
    }
    auto r = http.Get("/metrics");
    ASSERT_TRUE(r);
    text = r->body;
    if (labelled(text, "conveyor_client_wait_seconds_total", waits[0]) > 0 &&
        labelled(text, "conveyor_client_wait_seconds_total", waits[1]) > 0) {
      break;
    }
  }
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - attached_at;
  for (const char* w : waits) {
    const auto waited = labelled(text, "conveyor_client_wait_seconds_total", w);
    EXPECT_GT(waited, 0) << w << "\n" << text;
    EXPECT_LE(waited, since.count()) << w;  // no more than it has been attached
  }
  auto page = http.Get("/state.json");
  ASSERT_TRUE(page);
  expect_all_in(page->body, {"{\"name\":\"job 0 rank 0\",\"wait_s\":",
                             "{\"name\":\"job 1 rank 0\",\"wait_s\":"});
  trainers.clear();
  stop_with_ctrl_c(node);
}

// Hostile clients on the endpoint: 16 connections that never send a byte, and one that sends
// a request head of 1 MiB. The node's run is not held back by them: it delivers every sample
// of every epoch and exits 0 (the endpoint lets them go at its time-outs).
TEST(NodeMetrics, SilentAndOversizedClientsHoldNothingBack) {
  temp_dir dir;
  auto images = make_image_folder(dir, 37);
  const auto port = free_tcp_ports(1).at(0);
  node_process node({"--topology", write_topology(dir, topology_text(images, port)).string(),
                     "--set", "trainer.epochs=300", "--set", "trainer.step_ms=5"});
  ASSERT_TRUE(node.wait_for_log("metrics: http://", 120s)) << node.err();
  std::vector<unique_fd> silent;
  for (int i = 0; i < 16; ++i) {
    silent.push_back(testing::tcp_connect(port));
    ASSERT_TRUE(silent.back());
  }
  auto oversized = testing::tcp_connect(port);
  ASSERT_TRUE(oversized);
  const std::string head = "GET /metrics?" + std::string(1 << 20, 'a');
  // The endpoint refuses the head past 8 KiB and closes: the write may stop short, never block
  // for long (the socket's buffer, then a reset).
  (void)::send(oversized.get(), head.data(), head.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ASSERT_EQ(node.finish(300s), 0) << node.err();
  EXPECT_EQ(testing::json_number(node.out(), "samples"), 37u * 300u);
  EXPECT_EQ(testing::json_number(node.out(), "lost"), 0u);
}

TEST(NodeMetrics, AnAddressTakenStopsStartUpWithExitTwoNamingIt) {
  temp_dir dir;
  auto images = make_image_folder(dir, 5);
  const auto taken = testing::tcp_listen();  // held from the start: no other test can take it
  ASSERT_TRUE(taken.first);
  const auto port = taken.second;
  auto r = run_node(dir, "--topology " + write_topology(dir, topology_text(images, port)).string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("monitor.metrics: cannot listen at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace conveyor

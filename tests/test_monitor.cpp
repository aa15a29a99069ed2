// The monitor's log: one line per actor report, and a warning when a mailbox keeps growing.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <caf/all.hpp>
#include <future>
#include <sstream>

#include "actors/monitor.hpp"
#include "actors/reporting.hpp"
#include "core/base/log.hpp"

namespace conveyor {
namespace {

class MonitorLog : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    log("monitor")->sinks().push_back(sink);
  }
  void TearDown() override { log("monitor")->sinks().pop_back(); }

  // Sends the reports and waits until the monitor has handled them all.
  void send_all(const std::vector<actor_report>& reports) {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    auto monitor = spawn_monitor(sys);
    caf::scoped_actor self{sys};
    for (const auto& r : reports) {
      self->send(monitor, atoms::report::value, r);
    }
    self->request(monitor, caf::infinite, atoms::tick::value)
        .receive([&](std::uint64_t seen) { EXPECT_EQ(seen, reports.size()); },
                 [&](caf::error& e) { FAIL() << sys.render(e); });
    self->send_exit(monitor, caf::exit_reason::user_shutdown);
  }

  std::ostringstream text_;
};

actor_report report(const std::string& name, std::uint64_t mailbox) {
  actor_report r;
  r.name = name;
  r.mailbox = mailbox;
  r.items = 120;
  r.items_per_s = 60;
  r.p50_us = 2500;
  r.p99_us = 41000;
  r.extra = "in_flight=3/12";
  return r;
}

TEST_F(MonitorLog, OneCompactLinePerReport) {
  send_all({report("preprocessor-0", 1), report("batcher", 0)});
  auto out = text_.str();
  EXPECT_NE(out.find("preprocessor-0"), std::string::npos) << out;
  EXPECT_NE(out.find("rate=60/s"), std::string::npos) << out;
  EXPECT_NE(out.find("p50=2.50ms"), std::string::npos) << out;
  EXPECT_NE(out.find("p99=41.00ms"), std::string::npos) << out;
  EXPECT_NE(out.find("in_flight=3/12"), std::string::npos) << out;
  EXPECT_EQ(out.find("cannot keep up"), std::string::npos) << out;
}

TEST_F(MonitorLog, WarnsWhenAMailboxKeepsGrowing) {
  send_all({report("batcher", 1), report("reader-0", 5), report("batcher", 4), report("batcher", 9),
            report("batcher", 20)});
  auto out = text_.str();
  EXPECT_NE(out.find("batcher: mailbox has grown 3 reports in a row (now 20)"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("reader-0: mailbox has grown"), std::string::npos);
}

// Holds its first message (ok) until `go` is set; answers a tick with its mailbox depth.
caf::behavior depth_probe(caf::event_based_actor* self, std::shared_ptr<std::promise<void>> entered,
                          std::shared_future<void> go) {
  return {
      [=](caf::ok_atom) {
        entered->set_value();
        go.wait();
      },
      [=](atoms::tick) -> std::uint64_t { return mailbox_depth(self); },
      [](int) {},
  };
}

TEST(MailboxDepth, CountsTheMessagesWaitingBehindTheOneHandled) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto entered = std::make_shared<std::promise<void>>();
  auto in_first = entered->get_future();
  std::promise<void> go;
  auto probe = sys.spawn(depth_probe, entered, go.get_future().share());
  caf::scoped_actor self{sys};
  self->send(probe, caf::ok_atom::value);
  in_first.wait();
  // Queued while the probe is busy: the tick, then 5 more behind it.
  auto depth = self->request(probe, caf::infinite, atoms::tick::value);
  for (int i = 0; i < 5; ++i) {
    self->send(probe, i);
  }
  go.set_value();
  depth.receive([](std::uint64_t n) { EXPECT_EQ(n, 5u); },
                [&](const caf::error& e) { FAIL() << sys.render(e); });
  self->send_exit(probe, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace conveyor

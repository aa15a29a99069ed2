// A dataset in object storage behind a failing store (support/fault_proxy.hpp between the node
// and a real S3 server): answers of 503 SlowDown, connections reset mid-answer, requests held
// past their deadline. Every sample is still delivered exactly once, and the run's JSON line
// counts every retry by its reason, as many as the proxy injected. A shard that stays
// unreadable is quarantined by record, with the reason, and nothing else is lost. A range GET
// cut mid-answer resumes after the bytes it received.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "core/remote/s3_client.hpp"
#include "support/fault_proxy.hpp"
#include "support/node_app.hpp"
#include "support/s3_server.hpp"

namespace conveyor {
namespace {

using testing::json_array;
using testing::json_number;
using testing::run_app;
using testing::temp_dir;

constexpr int images = 40;

// The number after "name": inside the JSON line's "s3_failures" object.
std::uint64_t failures(const std::string& json, const std::string& name) {
  std::smatch m;
  std::regex object("\"s3_failures\":\\{([^}]*)\\}");
  EXPECT_TRUE(std::regex_search(json, m, object)) << json;
  const std::string inside = m.empty() ? "" : m[1].str();
  std::smatch n;
  EXPECT_TRUE(std::regex_search(inside, n, std::regex("\"" + name + "\":([0-9]+)"))) << inside;
  return n.empty() ? 0 : std::stoull(n[1].str());
}

class S3Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.make_bucket("train");
    env_ = server_.app_env(dir_.path().string());
    auto r =
        run_app(env_ + " " + CONVEYOR_PACK_BIN, dir_,
                "--synthetic " + std::to_string(images) + " --images " + (dir_ / "img").string() +
                    " --large-fraction 0 --out s3://train/set --shard-size 1M --endpoint-url " +
                    server_.endpoint());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  testing::run_result node(std::uint16_t port, int timeout_ms, int retries) {
    auto file = testing::write_topology(
        dir_,
        "gpus = 2\n[dataset]\npath = \"s3://train/set\"\n"
        "[pipeline]\nbatch_size = 4\npreprocessors = 2\n[trainer]\nepochs = 2\n"
        "[s3]\nendpoint_url = \"http://127.0.0.1:" +
            std::to_string(port) + "\"\nread_size = \"256K\"\nconnections = 4\n" +
            "request_timeout_ms = " + std::to_string(timeout_ms) +
            "\nretries = " + std::to_string(retries) +
            "\nbackoff_ms = 2\n"
            "[supervision]\nmax_sample_retries = 0\n"
            "[[transform]]\nop = \"decode\"\n"
            "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
            "[[transform]]\nop = \"to_uint8\"\n");
    return run_app(env_ + " timeout 240 " + CONVEYOR_NODE_BIN, dir_, "--topology " + file.string());
  }

  testing::s3_server server_;
  temp_dir dir_;
  std::string env_;
};

TEST_F(S3Faults, ThrottlingResetsAndSlowAnswersLoseNothingAndAreCounted) {
  testing::proxy_faults faults;
  faults.throttle_share = 0.2;
  faults.reset_share = 0.1;
  faults.slow_share = 0.05;
  faults.slow_ms = 1500;
  faults.seed = 11;
  testing::fault_proxy proxy(server_.port(), faults);
  auto r = node(proxy.port(), 1000, 10);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "samples"), 2u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  EXPECT_EQ(json_number(r.out, "quarantined"), 0u);
  const auto injected = proxy.counts();
  ASSERT_GT(injected.throttled, 0u);
  ASSERT_GT(injected.resets, 0u);
  ASSERT_GT(injected.slowed, 0u);
  // Every injected fault was seen, by its reason, and retried.
  EXPECT_EQ(failures(r.out, "throttled"), injected.throttled);
  EXPECT_EQ(failures(r.out, "reset"), injected.resets);
  EXPECT_EQ(failures(r.out, "timeout"), injected.slowed);
  EXPECT_EQ(json_number(r.out, "s3_retries"),
            injected.throttled + injected.resets + injected.slowed);
  EXPECT_EQ(json_number(r.out, "s3_attempts"), injected.requests);
}

TEST_F(S3Faults, AShardThatStaysUnreadableIsQuarantinedByRecordAndNothingElseIsLost) {
  testing::proxy_faults faults;
  faults.fail_path = "shard-00001.cvs";
  faults.fail_after = 3;  // its header, trailer and index are read at start; then nothing
  testing::fault_proxy proxy(server_.port(), faults);
  auto r = node(proxy.port(), 2000, 2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto quarantined = json_number(r.out, "quarantined");
  EXPECT_GT(quarantined, 0u);
  EXPECT_LT(quarantined, 2u * images);
  EXPECT_EQ(json_number(r.out, "samples") + quarantined, 2u * images);
  EXPECT_EQ(json_number(r.out, "lost"), 0u);
  EXPECT_EQ(json_number(r.out, "duplicates"), 0u);
  EXPECT_NE(r.err.find("s3://train/set/shard-00001.cvs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SlowDown"), std::string::npos) << r.err;
}

// Through a proxy that cuts half the answers after half their body: the GET asks again only
// for what it has not received (every byte crosses once), the bytes are the
// object's, and what it reports having received only grows, up to the range's size.
TEST_F(S3Faults, ARangeCutMidAnswerResumesAfterWhatItReceived) {
  std::vector<std::uint8_t> object(3 << 20);
  std::mt19937 draw(7);
  for (auto& b : object) {
    b = static_cast<std::uint8_t>(draw());
  }
  server_.put("train", "blob", object);
  testing::proxy_faults faults;
  faults.reset_share = 0.5;
  faults.seed = 3;
  testing::fault_proxy proxy(server_.port(), faults);
  auto settings = server_.settings();
  settings.endpoint_url = "http://127.0.0.1:" + std::to_string(proxy.port());
  settings.retries = 40;
  settings.backoff_ms = 1;
  auto access = resolve_s3_access(settings, server_.credentials());
  ASSERT_TRUE(access) << access.error().what();
  auto counters = std::make_shared<transfer_counters>();
  s3_client client(std::make_shared<const s3_access>(*access), settings, counters);

  const std::uint64_t offset = 12345;
  const std::uint64_t size = object.size() - offset - 999;
  std::vector<std::uint8_t> into(size);
  std::vector<std::uint64_t> reported;
  auto got = client.get_range("train", "blob", offset, size, into.data(),
                              [&](std::uint64_t n) { reported.push_back(n); });
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(std::equal(into.begin(), into.end(), object.begin() + offset));
  ASSERT_GT(proxy.counts().resets, 0u);
  ASSERT_FALSE(reported.empty());
  EXPECT_TRUE(std::is_sorted(reported.begin(), reported.end()));
  EXPECT_EQ(reported.back(), size);
  // Every byte came once: a restart after a reset would have moved the cut answer's again.
  EXPECT_EQ(counters->snapshot().bytes_in, size);
}

}  // namespace
}  // namespace conveyor

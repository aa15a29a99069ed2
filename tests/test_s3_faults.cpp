// A dataset in object storage behind a failing store (support/fault_proxy.hpp between the node
// and a real S3 server): answers of 503 SlowDown, connections reset mid-answer, requests held
// past their deadline. Every sample is still delivered exactly once, and the run's JSON line
// counts every retry by its reason, as many as the proxy injected. A shard that stays
// unreadable is quarantined by record, with the reason, and nothing else is lost. A range GET
// cut mid-answer resumes after the bytes it received. A store that lies (answers rewritten by the
// proxy) is not believed: a listing that repeats a continuation token or never ends stops at a
// bound, a range whose every byte came before its connection broke is complete, and an answer
// for another range than the one asked is refused before a byte of it is written.
#include <gtest/gtest.h>

#include <atomic>
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

  testing::run_result node(std::uint16_t port, int timeout_ms, int retries,
                           const std::string& dataset = "") {
    auto file = testing::write_topology(
        dir_, "gpus = 2\n[dataset]\npath = \"s3://train/set\"\n" + dataset +
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

class S3FaultsByOrder : public S3Faults, public ::testing::WithParamInterface<const char*> {};

// Globally shuffled or in blocks (whole blocks fetched at once), the samples of the GETs that
// fail are quarantined by record, naming the object and the server's code.
TEST_P(S3FaultsByOrder, AShardThatStaysUnreadableIsQuarantinedByRecordAndNothingElseIsLost) {
  testing::proxy_faults faults;
  faults.fail_path = "shard-00001.cvs";
  faults.fail_after = 3;  // its header, trailer and index are read at start; then nothing
  testing::fault_proxy proxy(server_.port(), faults);
  auto r = node(proxy.port(), 2000, 2, GetParam());
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

INSTANTIATE_TEST_SUITE_P(Orders, S3FaultsByOrder,
                         ::testing::Values("shuffle = true\n",
                                           "shuffle = \"blocks\"\nshuffle_block = \"64K\"\n"
                                           "shuffle_span = 4\n"));

// A client of the server through `proxy`, with fast retries.
s3_client client_through(const testing::s3_server& server, const testing::fault_proxy& proxy,
                         const std::shared_ptr<transfer_counters>& counters) {
  auto settings = server.settings();
  settings.endpoint_url = "http://127.0.0.1:" + std::to_string(proxy.port());
  settings.retries = 40;
  settings.backoff_ms = 1;
  auto access = resolve_s3_access(settings, server.credentials());
  EXPECT_TRUE(access) << access.error().what();
  return s3_client(std::make_shared<const s3_access>(*access), settings, counters);
}

// An object of `size` random bytes at s3://train/<key>.
std::vector<std::uint8_t> put_random(const testing::s3_server& server, const std::string& key,
                                     std::size_t size) {
  std::vector<std::uint8_t> object(size);
  std::mt19937 draw(7);
  for (auto& b : object) {
    b = static_cast<std::uint8_t>(draw());
  }
  server.put("train", key, object);
  return object;
}

bool is_partial(const testing::proxy_answer& answer) {
  return answer.head.rfind("HTTP/1.1 206", 0) == 0;
}

// Through a proxy that cuts half the answers after half their body: the GET asks again only
// for what it has not received (every byte crosses once), the bytes are the
// object's, and what it reports having received only grows, up to the range's size.
TEST_F(S3Faults, ARangeCutMidAnswerResumesAfterWhatItReceived) {
  const auto object = put_random(server_, "blob", 3 << 20);
  testing::proxy_faults faults;
  faults.reset_share = 0.5;
  faults.seed = 3;
  testing::fault_proxy proxy(server_.port(), faults);
  auto counters = std::make_shared<transfer_counters>();
  auto client = client_through(server_, proxy, counters);

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

// The connection closes after the range's every byte but before its answer ends (a chunked
// body without its last chunk): the read is complete, and no second request asks for nothing
// (bytes=X-(X-1), which a store answers with the whole object or 416).
TEST_F(S3Faults, ARangeWhoseEveryByteCameBeforeItsConnectionBrokeIsComplete) {
  const auto object = put_random(server_, "blob", 1 << 20);
  testing::proxy_faults faults;
  faults.rewrite = [](const std::string&, testing::proxy_answer& a) {
    if (!is_partial(a)) {
      return;
    }
    char chunk_line[32];
    std::snprintf(chunk_line, sizeof chunk_line, "%zx\r\n", a.body.size());
    testing::set_header(a.head, "Content-Length", std::nullopt);
    testing::set_header(a.head, "Transfer-Encoding", "chunked");
    a.body = chunk_line + a.body + "\r\n";  // and no last chunk
    a.close_after = true;
  };
  testing::fault_proxy proxy(server_.port(), faults);
  auto counters = std::make_shared<transfer_counters>();
  auto client = client_through(server_, proxy, counters);
  const std::uint64_t offset = 1000;
  const std::uint64_t size = 5000;
  std::vector<std::uint8_t> into(size);
  auto got = client.get_range("train", "blob", offset, size, into.data());
  ASSERT_TRUE(got) << got.error().what();
  EXPECT_TRUE(std::equal(into.begin(), into.end(), object.begin() + offset));
  EXPECT_EQ(proxy.counts().requests, 1u);
  EXPECT_EQ(counters->snapshot().retries, 0u);
}

// A 206 whose Content-Range is not the range asked, or that has none, is a failed attempt
// naming both; the caller's buffer is not written.
TEST_F(S3Faults, AnAnswerForAnotherRangeIsRefusedBeforeAByteOfItIsWritten) {
  const auto object = put_random(server_, "blob", 1 << 20);
  const std::uint64_t offset = 4096;
  const std::uint64_t size = 3000;
  const std::string object_size = std::to_string(object.size());
  for (const bool with_header : {true, false}) {
    testing::proxy_faults faults;
    faults.rewrite = [&](const std::string&, testing::proxy_answer& a) {
      if (!is_partial(a)) {
        return;
      }
      // The object's first bytes, as a store that ignored the range's start would send them.
      set_body(a, std::string(object.begin(), object.begin() + size));
      testing::set_header(a.head, "Content-Range",
                          with_header
                              ? std::optional<std::string>("bytes 0-" + std::to_string(size - 1) +
                                                           "/" + object_size)
                              : std::nullopt);
    };
    testing::fault_proxy proxy(server_.port(), faults);
    auto client = client_through(server_, proxy, std::make_shared<transfer_counters>());
    std::vector<std::uint8_t> into(size, 0xab);
    auto got = client.get_range("train", "blob", offset, size, into.data());
    ASSERT_FALSE(got) << "with_header=" << with_header;
    const auto& message = got.error().message();
    EXPECT_NE(message.find("s3://train/blob"), std::string::npos) << message;
    EXPECT_NE(message.find("bytes=4096-7095"), std::string::npos) << message;
    EXPECT_NE(message.find(with_header ? "bytes 0-2999/" + object_size : "no Content-Range"),
              std::string::npos)
        << message;
    EXPECT_TRUE(std::all_of(into.begin(), into.end(), [](std::uint8_t b) { return b == 0xab; }))
        << "bytes of the wrong range were written";
    EXPECT_EQ(proxy.counts().requests, 1u) << "an answer for another range is not retried";
  }
}

// A store that answers every page "truncated, continue with the same token": the second page
// that gives it again ends the listing, naming the prefix and the page.
TEST_F(S3Faults, AListingThatRepeatsItsContinuationTokenIsRefusedNamingThePage) {
  testing::proxy_faults faults;
  faults.rewrite = testing::repeating_listing({{"set/a.tar", 10240}});
  testing::fault_proxy proxy(server_.port(), faults);
  auto client = client_through(server_, proxy, std::make_shared<transfer_counters>());
  auto listed = client.list("train", "set/");
  ASSERT_FALSE(listed);
  const auto& message = listed.error().message();
  EXPECT_NE(message.find("s3://train/set/"), std::string::npos) << message;
  EXPECT_NE(message.find("page 2"), std::string::npos) << message;
  EXPECT_NE(message.find("\"again\""), std::string::npos) << message;
  EXPECT_EQ(proxy.counts().requests, 2u);
}

// A store that gives a fresh token with every page forever: the listing stops at its bound of
// pages; one whose pages bring objects forever stops at its bound of objects.
TEST_F(S3Faults, AListingThatNeverEndsStopsAtItsBounds) {
  std::atomic<int> pages{0};
  testing::proxy_faults faults;
  faults.rewrite = [&](const std::string& request, testing::proxy_answer& a) {
    if (testing::is_listing(request)) {
      const auto n = std::to_string(++pages);
      testing::answer_listing(a, {{"set/" + n + ".tar", 10240}}, "token-" + n);
    }
  };
  testing::fault_proxy proxy(server_.port(), faults);
  auto client = client_through(server_, proxy, std::make_shared<transfer_counters>());
  auto by_pages = client.list("train", "set/", listing_bounds{5, 1000});
  ASSERT_FALSE(by_pages);
  EXPECT_NE(by_pages.error().message().find("s3://train/set/"), std::string::npos);
  EXPECT_NE(by_pages.error().message().find("5 pages"), std::string::npos)
      << by_pages.error().message();
  EXPECT_EQ(pages.load(), 5);
  auto by_objects = client.list("train", "set/", listing_bounds{1000, 3});
  ASSERT_FALSE(by_objects);
  EXPECT_NE(by_objects.error().message().find("3 objects"), std::string::npos)
      << by_objects.error().message();
  EXPECT_NE(by_objects.error().message().find("page 4"), std::string::npos)
      << by_objects.error().message();
  EXPECT_EQ(pages.load(), 5 + 4);
}

}  // namespace
}  // namespace conveyor

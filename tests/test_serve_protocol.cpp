// The serving control messages (core/serving/serve_protocol): every message round-trips, and
// any other bytes are a clear error.
#include <gtest/gtest.h>

#include <random>

#include "core/serving/serve_protocol.hpp"

namespace conveyor::serve {
namespace {

std::vector<message> samples() {
  return {attach{3, 7, 605},
          attached{4, 1u << 30, 8192, 8, 2, 90, 1281167, 256, true, 2},
          batch_ready{3, 89, 5004, 256, true},
          release{2, 123456789012},
          end{},
          failure{errc::not_found, "rank 9 is not one of the 8 ranks of job 0"},
          ask_report{},
          node_report{1000, 2, 5, 0, 0, 4000, 3, 1, 17, true},
          sign_state{605},
          state_signed{{1, 2, 3}}};
}

message round_trip(const message& m) {
  auto bytes = encode(m);
  EXPECT_LE(bytes.size(), max_message_size);
  auto back = decode(bytes.data(), bytes.size());
  EXPECT_TRUE(back) << back.error().what();
  EXPECT_EQ(encode(*back), bytes);
  return *back;
}

TEST(ServeProtocol, EveryMessageRoundTrips) {
  for (const auto& m : samples()) {
    auto back = round_trip(m);
    EXPECT_EQ(back.index(), m.index());
  }
  auto a = std::get<attached>(round_trip(samples()[1]));
  EXPECT_EQ(a.slot_bytes, 1u << 30);
  EXPECT_EQ(a.dataset_size, 1281167u);
  EXPECT_EQ(a.header_bytes, 8192u);
  EXPECT_TRUE(a.writable);
  auto r = std::get<node_report>(round_trip(samples()[7]));
  EXPECT_EQ(r.steps_executed, 4000u);
  EXPECT_EQ(r.filtered, 5u);
  EXPECT_TRUE(r.finished);
  auto b = std::get<batch_ready>(round_trip(samples()[2]));
  EXPECT_EQ(b.index, 5004u);
  EXPECT_TRUE(b.last_in_epoch);
  auto f = std::get<failure>(round_trip(samples()[5]));
  EXPECT_EQ(f.code, errc::not_found);
  EXPECT_EQ(f.text, "rank 9 is not one of the 8 ranks of job 0");
}

// The run's order travels with attached; an order no node would name (blocks of 0 samples, an
// unknown mode) is refused before a client draws an epoch from it.
TEST(ServeProtocol, AttachedCarriesTheOrderAndRefusesOneThatIsNotSound) {
  attached a;
  a.order = sample_order::in_blocks(92, 32);
  EXPECT_EQ(std::get<attached>(round_trip(a)).order, a.order);
  for (auto bad :
       {sample_order{shuffle_mode::blocks, 0, 32}, sample_order{shuffle_mode::blocks, 92, 0},
        sample_order{shuffle_mode::global, 92, 32}}) {
    a.order = bad;
    auto bytes = encode(a);
    auto back = decode(bytes.data(), bytes.size());
    ASSERT_FALSE(back) << describe(bad);
    EXPECT_NE(back.error().message().find("order (dataset.shuffle)"), std::string::npos)
        << back.error().what();
  }
  a.order = sample_order::shuffled(true);
  auto bytes = encode(a);
  bytes[8 + 4 + 8 + 8 + 4 + 4 + 8 + 8 + 8 + 1 + 8 + 8] = 7;  // the mode: after the seed
  EXPECT_FALSE(decode(bytes.data(), bytes.size()));
}

TEST(ServeProtocol, OnlyAttachAttachedAndSignStateTakeADescriptor) {
  std::vector<std::size_t> taking;
  for (const auto& m : samples()) {
    if (takes_descriptor(m)) {
      taking.push_back(m.index());
    }
  }
  EXPECT_EQ(taking, (std::vector<std::size_t>{0, 1, 8}));
  EXPECT_EQ(std::get<release>(round_trip(samples()[3])).waited_ns, 123456789012u);
  auto s = std::get<state_signed>(round_trip(samples()[9]));
  EXPECT_EQ(s.mac[2], 3);
}

TEST(ServeProtocol, ANonzeroReservedByteIsNamedAsSuch) {
  auto bytes = encode(release{1});
  bytes[7] = 9;
  auto bad = decode(bytes.data(), bytes.size());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("reserved header byte is 9"), std::string::npos)
      << bad.error().what();
}

TEST(ServeProtocol, ALongFailureTextIsCutToFit) {
  auto bytes = encode(failure{errc::worker_failed, std::string(5000, 'x')});
  EXPECT_EQ(bytes.size(), max_message_size);
  auto back = decode(bytes.data(), bytes.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<failure>(*back).text.size(), max_failure_text);
}

void expect_refused(const std::vector<std::uint8_t>& bytes, const std::string& says) {
  auto m = decode(bytes.data(), bytes.size());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code(), errc::invalid_argument);
  EXPECT_NE(m.error().message().find(says), std::string::npos) << m.error().message();
}

TEST(ServeProtocol, BadBytesAreRefusedWithTheReason) {
  auto good = encode(attach{1, 2});
  expect_refused({good.begin(), good.begin() + 5}, "shorter than a header");
  auto bad_magic = good;
  bad_magic[0] ^= 0xFF;
  expect_refused(bad_magic, "bad magic");
  auto newer = good;
  newer[4] = 9;
  expect_refused(newer, "protocol version 9");
  auto unknown = good;
  unknown[6] = 42;
  expect_refused(unknown, "unknown message type 42");
  expect_refused({good.begin(), good.end() - 1}, "cut short");
  auto longer = good;
  longer.push_back(0);
  expect_refused(longer, "trailing bytes");
  auto odd = encode(failure{errc::io_error, "x"});
  odd[8] = 200;
  expect_refused(odd, "unknown error code 200");
}

TEST(ServeProtocol, EveryPrefixAndRandomBytesAreErrorsNotCrashes) {
  for (const auto& m : samples()) {
    auto bytes = encode(m);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(decode(bytes.data(), n)) << "type " << m.index() << " cut at " << n;
    }
  }
  std::mt19937_64 rng(12);
  std::vector<std::uint8_t> buffer(64);
  for (int i = 0; i < 20000; ++i) {
    auto n = rng() % buffer.size();
    for (auto& b : buffer) {
      b = static_cast<std::uint8_t>(rng());
    }
    if (i % 2 == 0 && n >= 8) {  // a valid header, so the field parsing is exercised
      auto h = encode(end{});
      std::copy(h.begin(), h.begin() + 6, buffer.begin());
      buffer[6] = static_cast<std::uint8_t>(1 + rng() % 6);
    }
    auto m = decode(buffer.data(), n);
    if (m) {
      EXPECT_EQ(encode(*m), std::vector<std::uint8_t>(buffer.begin(), buffer.begin() + n));
    }
  }
}

}  // namespace
}  // namespace conveyor::serve

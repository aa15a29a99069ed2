#include "support/s3_server.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "core/remote/s3_client.hpp"

namespace conveyor::testing {
namespace {

// An executable on PATH, or "".
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "" : path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto end = dirs.find(':', start);
    auto dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto candidate = std::filesystem::path(dir) / name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return "";
}

// Where scripts/ensure-s3rver installs s3rver.
std::string s3rver_binary() {
  if (const char* given = std::getenv("CONVEYOR_S3RVER")) {
    return given;
  }
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  auto base = cache != nullptr ? std::filesystem::path(cache)
                               : std::filesystem::path(home == nullptr ? "/root" : home) / ".cache";
  auto binary = base / "conveyor" / "s3rver" / "node_modules" / ".bin" / "s3rver";
  return std::filesystem::exists(binary) ? binary.string() : "";
}

std::shared_ptr<const s3_access> access_of(const s3_server& server) {
  auto access = resolve_s3_access(server.settings(), server.credentials());
  EXPECT_TRUE(access) << (access ? "" : access.error().what());
  return std::make_shared<const s3_access>(std::move(*access));
}

}  // namespace

s3_server::s3_server(bool check_credentials) : data_(std::make_unique<temp_dir>()) {
  port_ = free_tcp_ports(1).front();
  const auto moto = on_path("moto_server");
  const auto port = std::to_string(port_);
  if (!moto.empty()) {
    kind_ = "moto";
    std::vector<std::string> args = {"-H", "127.0.0.1", "-p", port};
    if (check_credentials) {
      args.insert(args.begin(), {"INITIAL_NO_AUTH_ACTION_COUNT=0", moto});
      process_ = std::make_unique<app_process>("/usr/bin/env", args);
    } else {
      process_ = std::make_unique<app_process>(moto, args);
    }
    EXPECT_TRUE(process_->wait_for_log("Running on", std::chrono::seconds(60)))
        << "moto_server did not start: " << process_->err();
    return;
  }
  const auto s3rver = s3rver_binary();
  if (s3rver.empty()) {
    ADD_FAILURE() << "neither moto_server nor s3rver (scripts/ensure-s3rver) found";
    return;
  }
  kind_ = "s3rver";
  // s3rver says it listens on stdout: joined to stderr, where wait_for_log reads.
  process_ = std::make_unique<app_process>(
      "/bin/sh", std::vector<std::string>{"-c", "exec \"$0\" -d \"$1\" -a 127.0.0.1 -p \"$2\" 1>&2",
                                          s3rver, data_->path().string(), port});
  EXPECT_TRUE(process_->wait_for_log("listening", std::chrono::seconds(60)))
      << "s3rver did not start: " << process_->err();
}

s3_server::~s3_server() = default;

std::string s3_server::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

s3_settings s3_server::settings() const {
  s3_settings s;
  s.endpoint_url = endpoint();
  s.addressing = s3_addressing::path;
  s.request_timeout_ms = 10000;
  s.retries = 6;
  s.backoff_ms = 5;
  return s;
}

environment s3_server::credentials() const {
  return [](const char* name) -> const char* {
    static const std::map<std::string, std::string> values = {
        {"AWS_ACCESS_KEY_ID", s3_test_key}, {"AWS_SECRET_ACCESS_KEY", s3_test_secret}};
    auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  };
}

std::string s3_server::app_env(const std::string& home) const {
  return "env -u AWS_PROFILE -u AWS_ENDPOINT_URL -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=" +
         std::string(s3_test_key) + " AWS_SECRET_ACCESS_KEY=" + s3_test_secret + " HOME=" + home;
}

void s3_server::make_bucket(const std::string& name) const {
  s3_client client(access_of(*this), settings(), std::make_shared<transfer_counters>());
  s3_request r;
  r.method = "PUT";
  r.bucket = name;
  auto made = client.call(r);
  ASSERT_TRUE(made) << made.error().what();
}

void s3_server::put(const std::string& bucket, const std::string& key,
                    const std::vector<std::uint8_t>& bytes) const {
  s3_client client(access_of(*this), settings(), std::make_shared<transfer_counters>());
  auto put = client.put_object(bucket, key, bytes.data(), bytes.size());
  ASSERT_TRUE(put) << put.error().what();
}

std::vector<std::uint8_t> s3_server::get(const std::string& bucket, const std::string& key) const {
  s3_client client(access_of(*this), settings(), std::make_shared<transfer_counters>());
  auto got = client.get_object(bucket, key, 1u << 30);
  EXPECT_TRUE(got) << got.error().what();
  return got ? *got : std::vector<std::uint8_t>{};
}

}  // namespace conveyor::testing

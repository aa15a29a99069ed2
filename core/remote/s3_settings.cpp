#include "core/remote/s3_settings.hpp"

#include <cstdlib>
#include <optional>

#include "core/remote/aws_profiles.hpp"

namespace conveyor {
namespace {

std::string env_or(const environment& env, const char* name, const std::string& fallback) {
  const char* value = env(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

// The value of `key` in a profile, or "".
std::string key_of(const std::optional<aws::profile_keys>& profile, const std::string& key) {
  if (!profile) {
    return "";
  }
  auto it = profile->find(key);
  return it == profile->end() ? "" : it->second;
}

struct shared_files {
  std::optional<aws::profile_file> credentials;
  std::optional<aws::profile_file> config;
  std::filesystem::path credentials_path;
  std::filesystem::path config_path;
};

expected<shared_files> read_shared_files(const environment& env) {
  const std::string home = env_or(env, "HOME", "");
  shared_files out;
  out.credentials_path =
      env_or(env, "AWS_SHARED_CREDENTIALS_FILE", home.empty() ? "" : home + "/.aws/credentials");
  out.config_path = env_or(env, "AWS_CONFIG_FILE", home.empty() ? "" : home + "/.aws/config");
  for (auto [path, slot, config] : {std::tuple{&out.credentials_path, &out.credentials, false},
                                    std::tuple{&out.config_path, &out.config, true}}) {
    if (path->empty()) {
      continue;
    }
    auto file = aws::read_profile_file(*path, config);
    if (!file) {
      return error{errc::invalid_config, file.error().message()};
    }
    *slot = std::move(*file);
  }
  return out;
}

std::optional<aws::profile_keys> profile_in(const std::optional<aws::profile_file>& file,
                                            const std::string& profile) {
  return file ? file->find(profile) : std::nullopt;
}

// The keys of `profile`: its credentials-file section over its config-file section.
std::optional<aws_credentials> profile_credentials(const shared_files& files,
                                                   const std::string& profile) {
  for (const auto* file : {&files.credentials, &files.config}) {
    auto keys = profile_in(*file, profile);
    auto access = key_of(keys, "aws_access_key_id");
    auto secret = key_of(keys, "aws_secret_access_key");
    if (!access.empty() && !secret.empty()) {
      return aws_credentials{access, secret, key_of(keys, "aws_session_token"),
                             "profile " + profile + " of " + (*file)->path.string()};
    }
  }
  return std::nullopt;
}

expected<aws_credentials> resolve_credentials(const s3_settings& settings, const environment& env,
                                              const shared_files& files,
                                              const std::string& profile) {
  const auto access = env_or(env, "AWS_ACCESS_KEY_ID", "");
  const auto secret = env_or(env, "AWS_SECRET_ACCESS_KEY", "");
  if (settings.profile.empty() && !access.empty() && !secret.empty()) {
    return aws_credentials{access, secret, env_or(env, "AWS_SESSION_TOKEN", ""),
                           "the environment (AWS_ACCESS_KEY_ID)"};
  }
  if (auto found = profile_credentials(files, profile)) {
    return std::move(*found);
  }
  const bool named = !settings.profile.empty() || env("AWS_PROFILE") != nullptr;
  const bool exists = profile_in(files.credentials, profile) || profile_in(files.config, profile);
  std::string where =
      "looked in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, " +
      (files.credentials_path.empty() ? std::string("no credentials file")
                                      : files.credentials_path.string()) +
      " and " +
      (files.config_path.empty() ? std::string("no config file") : files.config_path.string());
  if (named && !exists) {
    return error{errc::invalid_config,
                 "the AWS profile \"" + profile + "\" is in neither shared file (" + where + ")"};
  }
  return error{errc::invalid_config,
               "no AWS credentials for profile \"" + profile + "\" (" + where + ")"};
}

struct endpoint_parts {
  std::string scheme;
  std::string host;
};

expected<endpoint_parts> split_endpoint(const std::string& url, const std::string& from) {
  auto bad = [&]() {
    return error{errc::invalid_config, from + ": \"" + url +
                                           "\" is not an endpoint URL (http://host[:port] or "
                                           "https://host[:port])"};
  };
  auto sep = url.find("://");
  if (sep == std::string::npos) {
    return bad();
  }
  endpoint_parts out{url.substr(0, sep), url.substr(sep + 3)};
  while (!out.host.empty() && out.host.back() == '/') {
    out.host.pop_back();
  }
  if ((out.scheme != "http" && out.scheme != "https") || out.host.empty() ||
      out.host.find_first_of("/?#@ ") != std::string::npos) {
    return bad();
  }
  return out;
}

}  // namespace

std::string s3_access::describe() const {
  return "endpoint " + scheme + "://" + host + ", region " + region + ", " +
         (virtual_host ? "virtual-host" : "path-style") + " addressing, credentials from " +
         credentials.origin;
}

environment process_environment() {
  return [](const char* name) { return static_cast<const char*>(std::getenv(name)); };
}

expected<s3_access> resolve_s3_access(const s3_settings& settings, const environment& env) {
  auto files = read_shared_files(env);
  if (!files) {
    return std::move(files).error();
  }
  const auto profile =
      !settings.profile.empty() ? settings.profile : env_or(env, "AWS_PROFILE", "default");
  const auto config = profile_in(files->config, profile);
  s3_access out;
  out.region =
      !settings.region.empty()
          ? settings.region
          : env_or(env, "AWS_REGION", env_or(env, "AWS_DEFAULT_REGION", key_of(config, "region")));
  if (out.region.empty()) {
    out.region = "us-east-1";
  }
  std::string endpoint = settings.endpoint_url;
  std::string from = "s3.endpoint_url";
  for (auto [name, value] :
       {std::pair{"AWS_ENDPOINT_URL_S3", env_or(env, "AWS_ENDPOINT_URL_S3", "")},
        std::pair{"AWS_ENDPOINT_URL", env_or(env, "AWS_ENDPOINT_URL", "")},
        std::pair{"the profile's endpoint_url", key_of(config, "endpoint_url")}}) {
    if (endpoint.empty() && !value.empty()) {
      endpoint = value;
      from = name;
    }
  }
  const bool aws_own = endpoint.empty();
  if (aws_own) {
    endpoint = "https://s3." + out.region + ".amazonaws.com";
  }
  auto parts = split_endpoint(endpoint, from);
  if (!parts) {
    return std::move(parts).error();
  }
  out.scheme = parts->scheme;
  out.host = parts->host;
  out.virtual_host = settings.addressing == s3_addressing::virtual_host ||
                     (settings.addressing == s3_addressing::automatic && aws_own);
  auto credentials = resolve_credentials(settings, env, *files, profile);
  if (!credentials) {
    return std::move(credentials).error();
  }
  out.credentials = std::move(*credentials);
  return out;
}

expected<s3_target> resolve_s3_target(const std::string& url, const s3_settings& settings,
                                      const environment& env) {
  auto at = parse_s3_url(url);
  if (!at) {
    return error{errc::invalid_config, at.error().message()};
  }
  auto access = resolve_s3_access(settings, env);
  if (!access) {
    return error{errc::invalid_config, url + ": " + access.error().message()};
  }
  return s3_target{std::move(*at), std::make_shared<const s3_access>(std::move(*access))};
}

}  // namespace conveyor

// The SigV4 signer (core/remote/aws_sigv4.hpp) against AWS's published test vectors
// (tests/data/sigv4/: the canonical request, the string to sign with its credential scope, and
// the signature of each request), and the pieces S3 relies on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/remote/aws_sigv4.hpp"

namespace conveyor {
namespace {

const std::filesystem::path vectors =
    std::filesystem::path(CONVEYOR_SOURCE_DIR) / "tests/data/sigv4";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int hex_value(char c) {
  return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

std::string percent_decoded(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// One vector's request.txt: the request line, headers (folded lines joined), blank line, body.
struct vector_request {
  aws::signable_request request;
  std::string body;
};

vector_request parse_request(const std::string& text) {
  vector_request out;
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  const auto first_space = line.find(' ');
  const auto protocol = line.rfind(" HTTP/");
  out.request.method = line.substr(0, first_space);
  const auto target = line.substr(first_space + 1, protocol - first_space - 1);
  const auto question = target.find('?');
  out.request.path = target.substr(0, question);
  if (question != std::string::npos) {
    std::istringstream pairs(target.substr(question + 1));
    std::string pair;
    while (std::getline(pairs, pair, '&')) {
      const auto eq = pair.find('=');
      out.request.query.emplace_back(
          percent_decoded(pair.substr(0, eq)),
          eq == std::string::npos ? "" : percent_decoded(pair.substr(eq + 1)));
    }
  }
  while (std::getline(lines, line) && !line.empty()) {
    if (line[0] == ' ' || line[0] == '\t') {
      out.request.headers.back().second += "\n" + line;  // a folded value
      continue;
    }
    const auto colon = line.find(':');
    out.request.headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
  }
  std::ostringstream rest;
  rest << lines.rdbuf();
  out.body = rest.str();
  return out;
}

// "2015-08-30T12:36:00Z" -> "20150830T123600Z".
std::string compact(std::string iso) {
  std::string out;
  for (char c : iso) {
    if (c != '-' && c != ':') {
      out += c;
    }
  }
  return out;
}

struct vector_case {
  std::string name;
  aws::signable_request request;
  aws::signing_scope scope;
  std::string secret;
};

vector_case load(const std::filesystem::path& dir) {
  auto context = nlohmann::json::parse(slurp(dir / "context.json"));
  auto parsed = parse_request(slurp(dir / "request.txt"));
  vector_case c{dir.filename().string(),
                parsed.request,
                {compact(context["timestamp"]), context["region"], context["service"]},
                context["credentials"]["secret_access_key"]};
  c.request.headers.emplace_back("X-Amz-Date", c.scope.timestamp);
  const auto& credentials = context["credentials"];
  if (credentials.contains("token")) {
    c.request.headers.emplace_back("X-Amz-Security-Token", credentials["token"]);
  }
  c.request.payload_hash = aws::sha256_hex(parsed.body.data(), parsed.body.size());
  if (context.contains("sign_body") && context["sign_body"] == true) {
    c.request.headers.emplace_back("X-Amz-Content-Sha256", c.request.payload_hash);
  }
  return c;
}

std::vector<std::filesystem::path> vector_dirs() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(vectors)) {
    if (entry.is_directory()) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AwsSigv4, EveryPublishedVectorSignsAsAwsDoes) {
  const auto dirs = vector_dirs();
  ASSERT_EQ(dirs.size(), 30u) << "the vectors of tests/data/sigv4";
  for (const auto& dir : dirs) {
    auto c = load(dir);
    SCOPED_TRACE(c.name);
    const auto canonical = aws::canonical_request(c.request);
    EXPECT_EQ(canonical, slurp(dir / "header-canonical-request.txt"));
    const auto to_sign = aws::string_to_sign(c.scope, canonical);
    EXPECT_EQ(to_sign, slurp(dir / "header-string-to-sign.txt"));
    EXPECT_EQ(aws::signature(c.secret, c.scope, to_sign), slurp(dir / "header-signature.txt"));
  }
}

TEST(AwsSigv4, TheCredentialScopeAndAuthorizationHeader) {
  auto c = load(vectors / "get-vanilla");
  EXPECT_EQ(c.scope.credential_scope(), "20150830/us-east-1/service/aws4_request");
  EXPECT_EQ(aws::authorization("AKIDEXAMPLE", c.secret, c.scope, c.request),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=" +
                slurp(vectors / "get-vanilla" / "header-signature.txt"));
}

TEST(AwsSigv4, KeysAreEncodedOnceWithSlashesKept) {
  // S3 object keys: '/' separates nothing to S3 but is kept; every other reserved byte and
  // every non-ASCII byte is %XY, once (S3 does not double-encode as other services do).
  EXPECT_EQ(aws::uri_encode("set/train-000.tar", true), "set/train-000.tar");
  EXPECT_EQ(aws::uri_encode("a b+c=d&é", true), "a%20b%2Bc%3Dd%26%C3%A9");
  EXPECT_EQ(aws::uri_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(aws::uri_encode("-._~", false), "-._~");
}

TEST(AwsSigv4, TimestampsAreUtc) {
  EXPECT_EQ(aws::amz_timestamp(1440938160), "20150830T123600Z");
  EXPECT_EQ(aws::sha256_hex("", 0), aws::empty_payload_sha256);
}

}  // namespace
}  // namespace conveyor

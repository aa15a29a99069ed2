// Where a node's object-store settings come from (core/remote/s3_settings.hpp,
// aws_profiles.hpp, s3_location.hpp): the environment, the AWS shared files and their profiles
// in the order the AWS CLI and SDKs use, addresses, and what is said when something is wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "core/remote/aws_profiles.hpp"
#include "core/remote/s3_location.hpp"
#include "core/remote/s3_settings.hpp"
#include "core/remote/xml_fields.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

// An environment of the given variables only.
class fake_environment {
 public:
  explicit fake_environment(std::map<std::string, std::string> values)
      : values_(std::move(values)) {}
  environment get() const {
    return [this](const char* name) -> const char* {
      auto it = values_.find(name);
      return it == values_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> values_;
};

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(S3Location, AddressesSplitIntoBucketAndPrefix) {
  auto a = parse_s3_url("s3://my-bucket/sets/train/");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bucket, "my-bucket");
  EXPECT_EQ(a->prefix, "sets/train");
  EXPECT_EQ(a->key("manifest.txt"), "sets/train/manifest.txt");
  EXPECT_EQ(a->url("x"), "s3://my-bucket/x");
  auto root = parse_s3_url("s3://data.lake");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->key("manifest.txt"), "manifest.txt");
  EXPECT_EQ(root->url(), "s3://data.lake");
  for (const char* bad : {"s3://", "s3://ab/x", "s3://Upper/x", "s3://-dash/x", "s3://a_b_c/x",
                          "s3://bucket/a//b", "http://bucket/x", "bucket/x"}) {
    auto r = parse_s3_url(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message().find(bad), std::string::npos) << r.error().message();
  }
  EXPECT_TRUE(is_s3_url("s3://b/c"));
  EXPECT_FALSE(is_s3_url("/data/s3://b"));
}

TEST(S3Settings, EnvironmentCredentialsComeFirstAndAreNeverDescribed) {
  temp_dir home;
  write(home / ".aws/credentials",
        "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n");
  fake_environment env({{"HOME", home.path().string()},
                        {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                        {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"},
                        {"AWS_SESSION_TOKEN", "ENVTOKEN"},
                        {"AWS_REGION", "eu-west-3"}});
  auto a = resolve_s3_access({}, env.get());
  ASSERT_TRUE(a) << a.error().what();
  EXPECT_EQ(a->credentials.access_key, "ENVKEY");
  EXPECT_EQ(a->credentials.session_token, "ENVTOKEN");
  EXPECT_EQ(a->region, "eu-west-3");
  EXPECT_EQ(a->host, "s3.eu-west-3.amazonaws.com");
  EXPECT_EQ(a->scheme, "https");
  EXPECT_TRUE(a->virtual_host) << "AWS's own endpoint: virtual-host addressing";
  const auto said = a->describe();
  EXPECT_NE(said.find("the environment"), std::string::npos) << said;
  for (const char* secret : {"ENVKEY", "ENVSECRET", "ENVTOKEN"}) {
    EXPECT_EQ(said.find(secret), std::string::npos) << said;
  }
}

TEST(S3Settings, ProfilesFromTheSharedFilesAndTheirRegionAndEndpoint) {
  temp_dir home;
  write(home / ".aws/credentials",
        "# keys\n[default]\naws_access_key_id = DEFKEY\naws_secret_access_key = DEFSECRET\n"
        "[lab]\naws_access_key_id=LABKEY\naws_secret_access_key=LABSECRET\n");
  write(home / ".aws/config",
        "[default]\nregion = us-west-2\n[profile lab]\nregion = ap-south-1\n"
        "endpoint_url = http://minio.lab:9000\ns3 =\n  addressing_style = path\n"
        "[profile only-config]\naws_access_key_id = CFGKEY\naws_secret_access_key = CFGSECRET\n");
  fake_environment plain({{"HOME", home.path().string()}});
  auto d = resolve_s3_access({}, plain.get());
  ASSERT_TRUE(d) << d.error().what();
  EXPECT_EQ(d->credentials.access_key, "DEFKEY");
  EXPECT_EQ(d->region, "us-west-2");
  EXPECT_NE(d->credentials.origin.find("profile default of"), std::string::npos);

  fake_environment lab({{"HOME", home.path().string()}, {"AWS_PROFILE", "lab"}});
  auto l = resolve_s3_access({}, lab.get());
  ASSERT_TRUE(l) << l.error().what();
  EXPECT_EQ(l->credentials.access_key, "LABKEY");
  EXPECT_EQ(l->region, "ap-south-1");
  EXPECT_EQ(l->host, "minio.lab:9000");
  EXPECT_EQ(l->scheme, "http");
  EXPECT_FALSE(l->virtual_host) << "an endpoint of one's own: path-style";

  s3_settings named;
  named.profile = "only-config";
  named.region = "eu-north-1";
  named.endpoint_url = "https://ceph.example:8443/";
  auto c = resolve_s3_access(named, lab.get());
  ASSERT_TRUE(c) << c.error().what();
  EXPECT_EQ(c->credentials.access_key, "CFGKEY");
  EXPECT_EQ(c->region, "eu-north-1");
  EXPECT_EQ(c->host, "ceph.example:8443");

  // s3.profile wins over the environment's keys, as an explicit profile does in the SDKs.
  fake_environment keys({{"HOME", home.path().string()},
                         {"AWS_ACCESS_KEY_ID", "ENVKEY"},
                         {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"}});
  s3_settings lab_profile;
  lab_profile.profile = "lab";
  EXPECT_EQ(resolve_s3_access(lab_profile, keys.get())->credentials.access_key, "LABKEY");
  // AWS_ENDPOINT_URL over the profile's.
  fake_environment url({{"HOME", home.path().string()},
                        {"AWS_PROFILE", "lab"},
                        {"AWS_ENDPOINT_URL", "http://127.0.0.1:9000"}});
  EXPECT_EQ(resolve_s3_access({}, url.get())->host, "127.0.0.1:9000");
}

TEST(S3Settings, MissingOrBrokenCredentialsSayWhereTheyWereLookedFor) {
  temp_dir home;
  fake_environment nothing({{"HOME", home.path().string()}});
  auto none = resolve_s3_access({}, nothing.get());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::invalid_config);
  EXPECT_NE(none.error().message().find("no AWS credentials"), std::string::npos);
  EXPECT_NE(none.error().message().find(".aws/credentials"), std::string::npos);

  fake_environment ghost({{"HOME", home.path().string()}, {"AWS_PROFILE", "ghost"}});
  auto missing = resolve_s3_access({}, ghost.get());
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("\"ghost\" is in neither"), std::string::npos)
      << missing.error().message();

  write(home / ".aws/credentials", "[default]\naws_access_key_id = K\nthis line is wrong\n");
  auto broken = resolve_s3_access({}, nothing.get());
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("credentials line 3"), std::string::npos)
      << broken.error().message();
  EXPECT_EQ(broken.error().message().find("= K"), std::string::npos);

  s3_settings ftp;
  ftp.endpoint_url = "ftp://host";
  fake_environment keys({{"AWS_ACCESS_KEY_ID", "A"}, {"AWS_SECRET_ACCESS_KEY", "B"}});
  auto bad = resolve_s3_access(ftp, keys.get());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("s3.endpoint_url"), std::string::npos);
}

TEST(XmlFields, TheFieldsOfS3AnswersAndNothingFromGarbage) {
  const std::string error =
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &lt;x&gt; &amp; "
      "more&#33;</Message></Error>";
  EXPECT_EQ(xml_text(error, "Code"), "NoSuchKey");
  EXPECT_EQ(xml_text(error, "Message"), "The key <x> & more!");
  const std::string listing =
      "<ListBucketResult><Contents><Key>a.tar</Key><Size>10</Size></Contents>"
      "<Contents><Key>b.tar</Key><Size>20</Size></Contents><KeyCount>2</KeyCount></"
      "ListBucketResult>";
  auto contents = xml_elements(listing, "Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(xml_text(contents[1], "Key"), "b.tar");
  EXPECT_EQ(xml_texts(listing, "Key"), (std::vector<std::string>{"a.tar", "b.tar"}));
  EXPECT_FALSE(xml_text(listing, "KeyC"));  // a prefix of a tag is not the tag
  for (const char* garbage : {"", "<Code>", "<Code>open", "</Code><Code", "\xff\xfe<<>>"}) {
    EXPECT_FALSE(xml_text(garbage, "Code")) << garbage;
  }
}

}  // namespace
}  // namespace conveyor

// WebDataset tar sets read as they are (core/storage/webdataset.hpp), on tars written by
// Python's tarfile: PAX, GNU and ustar long names, directories and links skipped, every
// readable sample's parts byte for byte as Python wrote them, and every problem (a damaged
// header, a truncated tar, duplicate keys, a part twice) confined to its sample.
#include <gtest/gtest.h>

#include <set>

#include "core/storage/record_parts.hpp"
#include "core/storage/sample_source.hpp"
#include "core/storage/webdataset.hpp"
#include "core/storage/webdataset_index.hpp"
#include "support/python_tars.hpp"

namespace conveyor {
namespace {

using testing::python_sample;
using testing::python_tar_set;
using testing::temp_dir;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Sample `id` of `tars` is what Python wrote.
void expect_sample(const webdataset& tars, std::uint64_t id, const python_tar_set& set) {
  const auto& want = set.samples[id];
  SCOPED_TRACE("sample " + std::to_string(id) + ": " + want.tar + " " + want.key);
  const auto where = (set.dir / want.tar).string() + " key " + want.key;
  EXPECT_EQ(tars.locate(id), where);
  auto r = tars.read(id);
  if (!want.readable) {
    ASSERT_FALSE(r) << "read a sample that should be refused";
    EXPECT_EQ(r.error().code(), errc::corrupt_shard);
    EXPECT_TRUE(contains(r.error().message(), where + ": ")) << r.error().message();
    EXPECT_TRUE(contains(r.error().message(), want.refusal)) << r.error().message();
    return;
  }
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(r->key, want.key);
  EXPECT_EQ(r->label, want.label);
  EXPECT_TRUE(r->multipart);
  EXPECT_EQ(tars.payload_size(id), r->payload.size());
  auto parts = parts_of(*r);
  ASSERT_TRUE(parts) << parts.error().what();
  ASSERT_EQ(parts->size(), want.parts.size());
  for (std::size_t i = 0; i < parts->size(); ++i) {
    EXPECT_EQ((*parts)[i].name, want.parts[i].first);
    EXPECT_EQ(std::vector<std::uint8_t>((*parts)[i].data, (*parts)[i].data + (*parts)[i].size),
              want.parts[i].second)
        << "part " << want.parts[i].first;
  }
  auto same = tars.check(id, *r);
  EXPECT_TRUE(same) << same.error().what();
}

TEST(WebDataset, EverySampleOfPythonsTarsReadsByteForByte) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  ASSERT_EQ(tars->size(), set.samples.size());
  for (std::uint64_t id = 0; id < tars->size(); ++id) {
    expect_sample(*tars, id, set);
  }
  // The tars in name order; notes.txt is no tar. A directory, a member without an extension.
  std::vector<std::filesystem::path> files{set.dir / "shard-000.tar", set.dir / "shard-001.tar",
                                           set.dir / "shard-002.tar"};
  EXPECT_EQ(tars->files(), files);
  EXPECT_EQ(tars->index().skipped_members(), 2u);
  EXPECT_EQ(tars->index().refused_samples(), 0u);
  EXPECT_EQ(tars->tar_of(0), 0u);
  EXPECT_EQ(tars->tar_of(tars->size() - 1), 2u);
}

TEST(WebDataset, EveryProblemIsConfinedToItsSample) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "damaged");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  ASSERT_EQ(tars->size(), set.samples.size());
  std::uint64_t refused = 0;
  for (std::uint64_t id = 0; id < tars->size(); ++id) {
    expect_sample(*tars, id, set);
    refused += set.samples[id].readable ? 0 : 1;
  }
  EXPECT_EQ(tars->index().refused_samples(), refused);
  EXPECT_EQ(tars->index().skipped_members(), 2u) << "the directory and the symlink";
}

// The id of the sample `key` of `tar` in `set` (the first one).
std::uint64_t id_of(const python_tar_set& set, const std::string& tar, const std::string& key) {
  for (std::uint64_t id = 0; id < set.samples.size(); ++id) {
    if (set.samples[id].tar == tar && set.samples[id].key == key) {
      return id;
    }
  }
  ADD_FAILURE() << tar << " " << key << " is not in the set";
  return 0;
}

TEST(WebDataset, RefusalsSayWhatIsWrongAndWhere) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "damaged");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  auto message = [&](const std::string& tar, const std::string& key) {
    auto r = tars->read(id_of(set, tar, key));
    return r ? std::string("(read)") : r.error().message();
  };
  // A damaged header: where, and that the rest of the tar is lost.
  auto header = message("a.tar", "k3");
  EXPECT_TRUE(contains(header, "header checksum mismatch in the member header at offset"))
      << header;
  EXPECT_TRUE(contains(header, "the rest of this tar")) << header;
  // A key in two tars: both places, in each refusal.
  for (const auto* tar : {"d.tar", "e.tar"}) {
    auto shared = message(tar, "shared");
    EXPECT_TRUE(contains(shared, (set.dir / "d.tar").string() + " at offset")) << shared;
    EXPECT_TRUE(contains(shared, (set.dir / "e.tar").string() + " at offset")) << shared;
  }
  // A key twice in one tar: the second place is there too.
  auto again = message("d.tar", "d0");
  EXPECT_TRUE(contains(again, "2 samples have it")) << again;
  // A truncated member: its size and the file's.
  auto cut = message("b.tar", "m2");
  EXPECT_TRUE(contains(cut, "member \"m2.jpg\"")) << cut;
  EXPECT_TRUE(contains(cut, "run past the end of the file")) << cut;
}

TEST(WebDataset, ASingleTarOpensAloneAndIdsAreStable) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto one = webdataset::open(set.dir / "shard-001.tar");
  ASSERT_TRUE(one) << one.error().what();
  EXPECT_EQ(one->size(), 4u);
  EXPECT_EQ(one->locate(0), (set.dir / "shard-001.tar").string() + " key 000010");
  auto again = webdataset::open(set.dir);
  auto first = webdataset::open(set.dir);
  ASSERT_TRUE(again && first);
  for (std::uint64_t id = 0; id < first->size(); ++id) {
    EXPECT_EQ(first->locate(id), again->locate(id));
  }
}

TEST(WebDataset, WrongCopiesFailTheCheck) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto tars = webdataset::open(set.dir);
  ASSERT_TRUE(tars) << tars.error().what();
  const std::uint64_t id = 1;  // train/000001: jpg, cls "1"
  auto good = *tars->read(id);
  auto expect_differs = [&](const record& copy, const std::string& needle) {
    auto same = tars->check(id, copy);
    ASSERT_FALSE(same) << "accepted a copy that differs in: " << needle;
    EXPECT_EQ(same.error().code(), errc::checksum_mismatch);
    EXPECT_TRUE(contains(same.error().message(), tars->locate(id))) << same.error().message();
    EXPECT_TRUE(contains(same.error().message(), needle)) << same.error().message();
  };
  auto copy = good;
  copy.key = "train/000002";
  expect_differs(copy, "key");
  copy = good;
  copy.label = 2;
  expect_differs(copy, "label 2");
  copy = good;
  copy.multipart = false;
  expect_differs(copy, "one part");
  copy = good;
  copy.payload.pop_back();
  expect_differs(copy, "part container");
  auto parts = *parts_of(good);
  auto rebuild = [&](const std::string& cls, std::size_t jpg_size) {
    std::vector<std::uint8_t> jpg(parts[0].data, parts[0].data + jpg_size);
    return record{good.key, good.label,
                  encode_parts({{"jpg", jpg}, {"cls", {cls.begin(), cls.end()}}}), true};
  };
  expect_differs(rebuild("2", parts[0].size), "cls part differs");
  expect_differs(rebuild("1", parts[0].size - 1), "part 0");
  EXPECT_TRUE(tars->check(id, rebuild("1", parts[0].size)));
  auto out_of_range = tars->check(tars->size(), good);
  ASSERT_FALSE(out_of_range);
  EXPECT_EQ(out_of_range.error().code(), errc::not_found);
}

TEST(WebDataset, OpensThroughSampleSourceWithTarsAsShards) {
  temp_dir dir;
  auto set = testing::make_python_tars(dir, "clean");
  auto source = open_sample_source(set.dir, dataset_format::webdataset);
  ASSERT_TRUE(source) << source.error().what();
  const auto& s = **source;
  ASSERT_EQ(s.size(), set.samples.size());
  EXPECT_TRUE(s.class_names().empty());
  EXPECT_EQ(s.files().size(), 3u);
  std::set<std::uint64_t> shards;
  for (std::uint64_t id = 0; id < s.size(); ++id) {
    auto r = s.read(id);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(s.stored_bytes(id), r->payload.size());
    EXPECT_TRUE(s.check(id, *r));
    shards.insert(*s.shard_of(id));
    EXPECT_EQ(s.locate(id), (set.dir / set.samples[id].tar).string() + " key " + r->key);
  }
  EXPECT_EQ(shards, (std::set<std::uint64_t>{0, 1, 2}));
}

TEST(WebDataset, APathWithoutSamplesIsAnError) {
  temp_dir dir;
  auto missing = webdataset::open(dir / "nothing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::not_found);
  std::filesystem::create_directories(dir / "empty");
  testing::write_file(dir / "empty" / "readme.txt", {'h', 'i'});
  auto none = webdataset::open(dir / "empty");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), errc::empty_dataset);
  testing::write_file(dir / "empty" / "zeros.tar", std::vector<std::uint8_t>(10240, 0));
  auto no_samples = webdataset::open(dir / "empty");
  ASSERT_FALSE(no_samples);
  EXPECT_EQ(no_samples.error().code(), errc::empty_dataset);
}

// A tar's listing of `members` names, 1 KiB apart.
tar_listing listing_of(const std::vector<std::string>& members) {
  tar_listing out;
  std::uint64_t at = 0;
  for (const auto& name : members) {
    out.members.push_back({name, at, at + 512, 512});
    at += 1024;
  }
  return out;
}

TEST(WebDataset, AKeyRepeatedThousandsOfTimesCostsLinearMemory) {
  // Keys a and b alternate: 4,000 samples, 2,000 of each key. Naming every place in every
  // sample's refusal took 384 MB here (and 33 GB for 40,000 members).
  std::vector<std::string> members;
  for (int i = 0; i < 4000; ++i) {
    members.push_back(i % 2 == 0 ? "a.jpg" : "b.jpg");
  }
  webdataset_index index;
  index.add_tar("t.tar", listing_of(members));
  index.finish();
  ASSERT_EQ(index.size(), 4000u);
  EXPECT_EQ(index.refused_samples(), 4000u);
  for (std::uint64_t id : {0u, 1u, 3999u}) {
    const auto* why = index.problem(id);
    ASSERT_NE(why, nullptr);
    EXPECT_TRUE(contains(*why, "duplicate key: 2000 samples have it (t.tar at offset ")) << *why;
    EXPECT_TRUE(contains(*why, " and 1996 more); each is refused")) << *why;
    EXPECT_LT(why->size(), 400u) << "a refusal's text does not grow with the samples";
  }
}

TEST(WebDataset, ASampleOfCountlessPartsIsIndexedInLinearTime) {
  // 200,000 parts of one key, the last one repeated: comparing each part with every earlier
  // one of its sample took 2 x 10^10 comparisons (ctest's timeout before the end).
  std::vector<std::string> members;
  for (int i = 0; i < 200000; ++i) {
    members.push_back("k.p" + std::to_string(i));
  }
  for (int i = 0; i < 10; ++i) {
    members.push_back("k.p" + std::to_string(i));
  }
  webdataset_index index;
  index.add_tar("t.tar", listing_of(members));
  index.finish();
  ASSERT_EQ(index.size(), 1u);
  const auto* why = index.problem(0);
  ASSERT_NE(why, nullptr);
  EXPECT_TRUE(contains(*why, "part \"p0\" is there twice (members with data at offsets 512 and "))
      << *why;
  EXPECT_TRUE(contains(*why, "; and 6 more")) << "4 reasons named, the rest counted: " << *why;
}

TEST(WebDataset, AFileThatIsNoTarIsOneRefusedSample) {
  temp_dir dir;
  std::vector<std::uint8_t> junk(3000);
  for (std::size_t i = 0; i < junk.size(); ++i) {
    junk[i] = static_cast<std::uint8_t>(i * 7 + 1);
  }
  testing::write_file(dir / "junk.tar", junk);
  auto tars = webdataset::open(dir / "junk.tar");
  ASSERT_TRUE(tars) << tars.error().what();
  ASSERT_EQ(tars->size(), 1u);
  auto r = tars->read(0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), errc::corrupt_shard);
  EXPECT_TRUE(contains(r.error().message(), "offset 0")) << r.error().message();
}

}  // namespace
}  // namespace conveyor

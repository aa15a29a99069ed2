// A LibriSpeech directory as samples (core/storage/librispeech.hpp): OpenSLR's layout, every
// audio file a sample of its bytes and its transcript line, and the errors that name files.
#include <gtest/gtest.h>

#include <fstream>

#include "core/storage/librispeech.hpp"
#include "core/storage/record_parts.hpp"
#include "core/storage/sample_source.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// 19/198: two utterances transcribed; 26/495: one FLAC, one WAV, one without a line.
fs::path make_set(const testing::temp_dir& dir) {
  auto root = dir / "LibriSpeech";
  write_text(root / "19/198/19-198-0000.flac", "flac bytes 0");
  write_text(root / "19/198/19-198-0001.flac", "flac bytes 1");
  write_text(root / "19/198/19-198.trans.txt",
             "19-198-0000 NORTHANGER ABBEY\n19-198-0001 THIS LITTLE WORK\n");
  write_text(root / "26/495/26-495-0000.wav", "wav bytes");
  write_text(root / "26/495/26-495-0001.flac", "untranscribed");
  write_text(root / "26/495/26-495.trans.txt", "26-495-0000 AND HE SAID\r\n26-495-0009 NO FILE\n");
  write_text(root / "README.TXT", "not a sample");
  return root;
}

TEST(LibriSpeech, EveryAudioFileIsASampleOfItsBytesAndItsLine) {
  testing::temp_dir dir;
  auto set = scan_librispeech(make_set(dir));
  ASSERT_TRUE(set) << set.error().what();
  ASSERT_EQ(set->utterances.size(), 4u);
  EXPECT_EQ(set->untranscribed, 1u);
  EXPECT_EQ(set->unheard, 1u);
  EXPECT_EQ(set->utterances[0].key, "19-198-0000");
  EXPECT_EQ(set->utterances[2].key, "26-495-0000");
  EXPECT_EQ(set->utterances[2].audio_part, "wav");
  EXPECT_EQ(*set->utterances[2].transcript, "AND HE SAID");  // "\r\n" is a line's end
  EXPECT_FALSE(set->utterances[3].transcript);

  auto r = read_utterance(set->utterances[1]);
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(r->key, "19-198-0001");
  EXPECT_TRUE(r->multipart);
  auto parts = parts_of(*r);
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "flac");
  EXPECT_EQ(std::string((*parts)[1].name), "txt");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*parts)[1].data), (*parts)[1].size),
            "THIS LITTLE WORK");
  auto lone = read_utterance(set->utterances[3]);
  ASSERT_TRUE(lone);
  EXPECT_EQ(parts_of(*lone)->size(), 1u);  // no txt: the step that needs it says so
}

TEST(LibriSpeech, OpensAsADatasetFormat) {
  testing::temp_dir dir;
  auto source = open_sample_source(make_set(dir), dataset_format::librispeech);
  ASSERT_TRUE(source) << source.error().what();
  EXPECT_EQ((*source)->size(), 4u);
  EXPECT_NE((*source)->locate(0).find("19-198-0000.flac"), std::string::npos);
  EXPECT_EQ((*source)->stored_bytes(0), 12u);
}

TEST(LibriSpeech, ConflictsAreRefusedNamingBothPlaces) {
  testing::temp_dir dir;
  auto root = make_set(dir);
  write_text(root / "19/199/19-198-0000.wav", "the same id elsewhere");
  auto twice = scan_librispeech(root);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code(), errc::invalid_argument);
  EXPECT_NE(twice.error().message().find("are both utterance 19-198-0000"), std::string::npos);
  fs::remove(root / "19/199/19-198-0000.wav");
  write_text(root / "19/199/19-199.trans.txt", "19-198-0001 AGAIN\n");
  auto lines = scan_librispeech(root);
  ASSERT_FALSE(lines);
  EXPECT_NE(lines.error().message().find("both transcribe utterance 19-198-0001"),
            std::string::npos);
  write_text(root / "19/199/19-199.trans.txt", " SPACE FIRST\n");
  auto bad = scan_librispeech(root);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("19-199.trans.txt:1: a transcript line begins with"),
            std::string::npos);
}

TEST(LibriSpeech, ALinkInsideTheSetIsFollowedUnderItsOwnName) {
  testing::temp_dir dir;
  auto root = make_set(dir);
  fs::create_directory_symlink("../19/198", root / "26/same");  // a directory: not walked
  fs::create_symlink("../../19/198/19-198-0001.flac", root / "26/495/26-495-0002.flac");
  auto set = scan_librispeech(root);
  ASSERT_TRUE(set) << set.error().what();
  ASSERT_EQ(set->utterances.size(), 5u);
  const auto& linked = set->utterances[4];
  EXPECT_EQ(linked.key, "26-495-0002");
  auto r = read_utterance(linked);
  ASSERT_TRUE(r) << r.error().what();
  auto parts = parts_of(*r);
  ASSERT_TRUE(parts);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*parts)[0].data), (*parts)[0].size),
            "flac bytes 1");
}

// A link out of the set would put another file's bytes (a key, a token) into samples: refused,
// naming the link and where it leads, by the scan and by the node's dataset.
TEST(LibriSpeech, ALinkOutOfTheSetIsRefusedNamingItAndItsTarget) {
  testing::temp_dir dir;
  auto root = make_set(dir);
  write_text(dir / "secret.flac", "not the set's");
  const auto link = root / "26/495/26-495-0002.flac";
  fs::create_symlink("../../../secret.flac", link);
  const auto target = fs::canonical(dir / "secret.flac").string();
  auto set = scan_librispeech(root);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().code(), errc::invalid_argument);
  EXPECT_EQ(set.error().message(), link.string() + " is a symbolic link to " + target +
                                       ", outside the dataset directory " +
                                       fs::canonical(root).string() +
                                       ": links out of it are not followed (copy the file in)");
  fs::remove(link);
  fs::create_symlink(target, root / "README.link");  // not read: left alone
  ASSERT_TRUE(scan_librispeech(root));
  fs::create_symlink(target, root / "26/495/26-495.trans.txt.x");  // neither
  fs::remove(root / "26/495/26-495.trans.txt");
  fs::create_symlink(target, root / "26/495/26-495.trans.txt");
  auto source = open_sample_source(root, dataset_format::librispeech);
  ASSERT_FALSE(source);
  EXPECT_NE(source.error().message().find("26-495.trans.txt is a symbolic link to " + target),
            std::string::npos)
      << source.error().message();
}

TEST(LibriSpeech, AnEmptyOrMissingDirectoryIsNoDataset) {
  testing::temp_dir dir;
  fs::create_directories(dir / "empty");
  write_text(dir / "empty/x.trans.txt", "1-1-0000 HELLO\n");
  auto empty = scan_librispeech(dir / "empty");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), errc::empty_dataset);
  auto missing = scan_librispeech(dir / "missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::not_found);
}

}  // namespace
}  // namespace conveyor

// Image datasets on disk: ImageFolder scans and list files.
#include <gtest/gtest.h>

#include <fstream>

#include "core/storage/image_list.hpp"
#include "support/test_support.hpp"

namespace conveyor {
namespace {

using testing::temp_dir;

void touch(const std::filesystem::path& p) {
  std::filesystem::create_directories(p.parent_path());
  testing::write_file(p, {1, 2, 3});
}

TEST(ImageList, FolderClassesAndFilesAreSortedAndFiltered) {
  temp_dir dir;
  touch(dir / "zebra" / "b.JPG");
  touch(dir / "zebra" / "a.png");
  touch(dir / "ant" / "x.jpeg");
  touch(dir / "ant" / "notes.txt");             // not an image: skipped
  touch(dir / "README");                        // a file at the top: not a class
  touch(dir / ".ipynb_checkpoints" / "c.jpg");  // hidden: not a class
  touch(dir / "ant" / ".hidden.jpg");           // hidden: not a sample
  auto list = scan_image_folder(dir.path());
  ASSERT_TRUE(list) << list.error().what();
  EXPECT_EQ(list->class_names, (std::vector<std::string>{"ant", "zebra"}));
  ASSERT_EQ(list->entries.size(), 3u);
  EXPECT_EQ(list->entries[0].key, "ant/x.jpeg");
  EXPECT_EQ(list->entries[0].label, 0);
  EXPECT_EQ(list->entries[1].key, "zebra/a.png");
  EXPECT_EQ(list->entries[2].key, "zebra/b.JPG");
  EXPECT_EQ(list->entries[2].label, 1);
}

TEST(ImageList, EmptyDirectoryMissingPathAndFileAreNamedErrors) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "empty" / "class_a");
  auto empty = scan_image_folder(dir / "empty");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), errc::empty_dataset);
  EXPECT_NE(empty.error().message().find("empty"), std::string::npos);
  auto missing = scan_image_folder(dir / "missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), errc::not_found);
  EXPECT_NE(missing.error().message().find("missing"), std::string::npos);
  touch(dir / "file.jpg");
  auto not_dir = scan_image_folder(dir / "file.jpg");
  ASSERT_FALSE(not_dir);
  EXPECT_EQ(not_dir.error().code(), errc::io_error);
}

TEST(ImageList, ListFileResolvesRelativePathsAndNamesBadLines) {
  temp_dir dir;
  std::ofstream(dir / "list.txt") << "# comment\n\nimgs/a.jpg 2\n/abs/b.jpg 0\n";
  auto list = read_image_list_file(dir / "list.txt");
  ASSERT_TRUE(list) << list.error().what();
  ASSERT_EQ(list->entries.size(), 2u);
  EXPECT_EQ(list->entries[0].path, dir / "imgs/a.jpg");
  EXPECT_EQ(list->entries[0].label, 2);
  EXPECT_EQ(list->entries[1].path, "/abs/b.jpg");
  EXPECT_EQ(list->class_names, (std::vector<std::string>{"0", "1", "2"}));
  for (const char* bad : {"a.jpg\n", "a.jpg x\n", "a.jpg -1\n", "a.jpg 1 extra\n"}) {
    std::ofstream(dir / "bad.txt") << "ok.jpg 0\n" << bad;
    auto r = read_image_list_file(dir / "bad.txt");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), errc::invalid_config);
    EXPECT_NE(r.error().message().find("bad.txt:2"), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace conveyor

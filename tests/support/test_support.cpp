#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <sys/stat.h>

#include "core/storage/file_slice.hpp"

namespace conveyor::testing {

temp_dir::temp_dir() {
  std::random_device rd;
  auto base = std::filesystem::temp_directory_path();
  for (;;) {
    path_ = base / ("conveyor-test-" + std::to_string(rd()));
    if (std::filesystem::create_directory(path_)) {
      return;
    }
  }
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::uint8_t> make_jpeg(int width, int height, std::uint64_t seed, int quality) {
  std::mt19937_64 rng(seed);
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    auto* row = image.ptr<cv::Vec3b>(y);
    for (int x = 0; x < width; ++x) {
      row[x] = cv::Vec3b(static_cast<std::uint8_t>(x * 255 / std::max(1, width - 1)),
                         static_cast<std::uint8_t>(y * 255 / std::max(1, height - 1)),
                         static_cast<std::uint8_t>((x + y + seed) % 256));
    }
  }
  std::uniform_int_distribution<int> coord_x(0, width - 1), coord_y(0, height - 1), c(0, 255);
  for (int i = 0; i < 6; ++i) {
    cv::circle(image, {coord_x(rng), coord_y(rng)}, std::max(2, width / 8),
               cv::Scalar(c(rng), c(rng), c(rng)), cv::FILLED);
  }
  std::vector<std::uint8_t> out;
  if (!cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, quality})) {
    throw std::runtime_error("make_jpeg: imencode failed");
  }
  return out;
}

prepared_ptr prepared_for(const sample_ticket& ticket) {
  auto p = std::make_shared<prepared_sample>();
  p->ticket = ticket;
  return p;
}

void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    throw std::runtime_error("write_file failed: " + path.string());
  }
}

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("read_file failed: " + path.string());
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::filesystem::path make_image_folder(const temp_dir& dir, int images) {
  auto root = dir / "images";
  for (int i = 0; i < images; ++i) {
    auto cls = root / ("class_" + std::to_string(i % 2));
    std::filesystem::create_directories(cls);
    write_file(cls / ("img_" + std::to_string(i) + ".jpg"),
               make_jpeg(64 + (i % 5) * 9, 48 + (i % 3) * 11, static_cast<std::uint64_t>(i)));
  }
  return root;
}

epoch_ids read_ids(std::istream& in) {
  epoch_ids out;
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_NE(line.rfind("error", 0), 0u) << line;
    std::istringstream fields(line);
    std::uint64_t epoch = 0;
    std::uint64_t id = 0;
    if (fields >> epoch >> id) {
      out[epoch].insert(id);
    }
  }
  return out;
}

epoch_ids read_ids_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return read_ids(in);
}

void expect_each_sample_once(const epoch_ids& seen, int images, int epochs) {
  for (std::uint64_t e = 0; e < static_cast<std::uint64_t>(epochs); ++e) {
    std::multiset<std::uint64_t> all;
    for (std::uint64_t id = 0; id < static_cast<std::uint64_t>(images); ++id) {
      all.insert(id);
    }
    EXPECT_EQ(seen.count(e) ? seen.at(e) : std::multiset<std::uint64_t>{}, all) << "epoch " << e;
  }
}

void merge_into(epoch_ids& into, const epoch_ids& from) {
  for (const auto& [e, ids] : from) {
    into[e].insert(ids.begin(), ids.end());
  }
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

void expect_quarantined(const std::vector<std::string>& quarantined,
                        const std::map<std::string, std::string>& reasons) {
  for (const auto& [key, reason] : reasons) {
    const bool named = std::any_of(quarantined.begin(), quarantined.end(), [&](const auto& line) {
      return line.find(key) != std::string::npos && line.find(reason) != std::string::npos;
    });
    EXPECT_TRUE(named) << key << " not quarantined with \"" << reason << "\"";
  }
  for (const auto& line : quarantined) {
    std::cout << line << "\n";
  }
}

std::vector<std::uint8_t> forged_slice_of(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  const file_identity identity{
      static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
      static_cast<std::uint64_t>(st.st_size),
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  return encode_file_slice({path.string(), 0, identity.size, identity});
}

}  // namespace conveyor::testing

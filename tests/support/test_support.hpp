#pragma once
/// Fixtures shared by the tests: temporary directories, real JPEG bytes, file helpers.

#include <cstdint>
#include <filesystem>
#include <istream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/batching/prepared_sample.hpp"

namespace conveyor::testing {

/// A fresh directory under the system temp dir, removed with everything in it on destruction.
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Real JPEG bytes (OpenCV's encoder) of a `width` x `height` colour image with gradients,
/// shapes and noise drawn from `seed`.
std::vector<std::uint8_t> make_jpeg(int width, int height, std::uint64_t seed, int quality = 90);

/// A prepared sample that carries only `ticket` (the batcher's logic reads no pixels).
prepared_ptr prepared_for(const sample_ticket& ticket);

void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes);

/// An image folder dataset under `dir`/images: `images` JPEGs of assorted sizes in two classes.
std::filesystem::path make_image_folder(const temp_dir& dir, int images);
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);

/// Every key of `reasons` is named, with its reason, by a line of `quarantined` (a
/// pipeline_report's quarantined_samples): a failed expectation names the key otherwise.
void expect_quarantined(const std::vector<std::string>& quarantined,
                        const std::map<std::string, std::string>& reasons);

/// Sample ids by epoch (each as often as it came).
using epoch_ids = std::map<std::uint64_t, std::multiset<std::uint64_t>>;
/// "<epoch> <id>" lines; a line that starts with "error" (a child process's report) fails the
/// test, naming it.
epoch_ids read_ids(std::istream& in);
/// An audit file of such lines (trainer.ids_file); empty when it does not open.
epoch_ids read_ids_file(const std::filesystem::path& path);
/// Every sample id in [0, images) exactly once in each of `epochs` epochs.
void expect_each_sample_once(const epoch_ids& seen, int images, int epochs);
/// `from`'s ids added to `into`'s, epoch by epoch.
void merge_into(epoch_ids& into, const epoch_ids& from);

/// A file slice descriptor (core/storage/file_slice.hpp) of the whole of whatever is at `path`
/// (a FIFO too), with its identity as stat(2) gives it: what a hostile dataset file forges.
std::vector<std::uint8_t> forged_slice_of(const std::filesystem::path& path);

/// How often `needle` (not empty) occurs in `text`, occurrences not overlapping.
std::size_t count_of(const std::string& text, const std::string& needle);

}  // namespace conveyor::testing

#include "core/codecs/synthetic_images.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/codecs/jpeg_encoder.hpp"

namespace conveyor {
namespace {

namespace fs = std::filesystem;

constexpr int small_min_side = 300;
constexpr int small_max_side = 640;
constexpr int large_min_side = 1800;
constexpr int large_max_side = 3200;
// Large images are drawn with their longer side at this size and upscaled: the shapes stay
// cheap to draw while the fine noise added at full size keeps the file and decode cost real.
constexpr int max_draw_side = 640;

// splitmix64: turns (seed, index) into well-spread, independent per-image seeds.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::uint64_t image_seed(std::uint64_t seed, std::uint64_t index) {
  return mix(mix(seed) ^ mix(index + 1));
}

int digits(std::uint64_t n) {
  int d = 1;
  for (; n >= 10; n /= 10) {
    ++d;
  }
  return d;
}

std::string zero_padded(std::uint64_t n, int width) {
  std::string s = std::to_string(n);
  return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))),
                     '0') +
         s;
}

/// Where image `index` goes; class i % classes. Padding keeps name order equal to index order.
struct layout {
  fs::path dir;
  std::uint64_t count = 0;
  int classes = 1;

  std::string class_name(int label) const {
    return "class_" + zero_padded(static_cast<std::uint64_t>(label),
                                  std::max(2, digits(static_cast<std::uint64_t>(classes - 1))));
  }
  fs::path image_path(std::uint64_t index) const {
    int label = static_cast<int>(index % static_cast<std::uint64_t>(classes));
    return dir / class_name(label) /
           ("img_" + zero_padded(index, std::max(6, digits(count == 0 ? 0 : count - 1))) + ".jpg");
  }
};

expected<void> validate(const synthetic_options& options) {
  if (!(options.large_fraction >= 0.0 && options.large_fraction <= 1.0)) {
    return error(errc::invalid_argument,
                 "large_fraction " + std::to_string(options.large_fraction) + " is outside [0, 1]");
  }
  if (options.classes < 1) {
    return error(errc::invalid_argument,
                 "classes " + std::to_string(options.classes) + " must be at least 1");
  }
  if (options.quality < 1 || options.quality > 100) {
    return error(errc::invalid_argument,
                 "quality " + std::to_string(options.quality) + " is outside 1-100");
  }
  return {};
}

/// Creates `dir` and its class directories; refuses a directory that already holds anything.
expected<void> prepare_directories(const layout& where) {
  std::error_code ec;
  fs::create_directories(where.dir, ec);
  if (ec) {
    return error(errc::io_error, "cannot create " + where.dir.string() + ": " + ec.message());
  }
  if (!fs::is_empty(where.dir, ec) || ec) {
    return error(errc::invalid_argument,
                 where.dir.string() + (ec ? ": " + ec.message() : " is not empty") +
                     " (synthetic images are only written into a new or empty directory)");
  }
  for (int label = 0; label < where.classes; ++label) {
    fs::path class_dir = where.dir / where.class_name(label);
    fs::create_directory(class_dir, ec);
    if (ec) {
      return error(errc::io_error, "cannot create " + class_dir.string() + ": " + ec.message());
    }
  }
  return {};
}

/// Exactly round(count * fraction) indices, chosen by a partial Fisher-Yates shuffle.
std::vector<bool> choose_large(std::uint64_t count, double fraction, std::uint64_t seed) {
  auto large = static_cast<std::uint64_t>(std::llround(static_cast<double>(count) * fraction));
  std::vector<std::uint64_t> order(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    order[i] = i;
  }
  std::vector<bool> is_large(count, false);
  std::uint64_t state = mix(seed ^ 0x6c61726765ull);  // "large": a stream apart from the images'
  for (std::uint64_t i = 0; i < large; ++i) {
    state = mix(state);
    std::uint64_t j = i + state % (count - i);
    std::swap(order[i], order[j]);
    is_large[order[i]] = true;
  }
  return is_large;
}

cv::Scalar random_colour(cv::RNG& rng) {
  return {rng.uniform(0.0, 255.0), rng.uniform(0.0, 255.0), rng.uniform(0.0, 255.0)};
}

cv::Point random_point(cv::RNG& rng, const cv::Size& size) {
  return {rng.uniform(0, size.width), rng.uniform(0, size.height)};
}

// A linear blend between two colours along a random direction: the "sky" of the picture.
void draw_gradient(cv::Mat& canvas, cv::RNG& rng) {
  cv::Scalar from = random_colour(rng);
  cv::Scalar to = random_colour(rng);
  double angle = rng.uniform(0.0, 2.0 * CV_PI);
  double dx = std::cos(angle) / canvas.cols;
  double dy = std::sin(angle) / canvas.rows;
  for (int y = 0; y < canvas.rows; ++y) {
    auto* row = canvas.ptr<cv::Vec3f>(y);
    for (int x = 0; x < canvas.cols; ++x) {
      double t = 0.5 + 0.5 * (x * dx + y * dy);
      for (int c = 0; c < 3; ++c) {
        row[x][c] = static_cast<float>(from[c] + t * (to[c] - from[c]));
      }
    }
  }
}

// Smooth blotches at a few scales (low-resolution noise, upscaled): the mid frequencies that
// make up most of a photo's JPEG size.
void add_texture(cv::Mat& canvas, cv::RNG& rng) {
  for (int cell : {48, 16, 4}) {
    cv::Mat low(std::max(2, canvas.rows / cell), std::max(2, canvas.cols / cell), CV_32FC3);
    double sigma = cell >= 16 ? 28.0 : 10.0;
    rng.fill(low, cv::RNG::NORMAL, cv::Scalar::all(0.0), cv::Scalar::all(sigma));
    cv::Mat up;
    cv::resize(low, up, canvas.size(), 0, 0, cv::INTER_CUBIC);
    canvas += up;
  }
}

void draw_shapes(cv::Mat& canvas, cv::RNG& rng) {
  const cv::Size size = canvas.size();
  const int scale = std::max(size.width, size.height);
  int shapes = rng.uniform(6, 16);
  for (int i = 0; i < shapes; ++i) {
    cv::Scalar colour = random_colour(rng);
    int thickness = rng.uniform(0, 3) == 0 ? rng.uniform(1, 6) : cv::FILLED;
    switch (rng.uniform(0, 4)) {
      case 0:
        cv::circle(canvas, random_point(rng, size), rng.uniform(scale / 40, scale / 6), colour,
                   thickness, cv::LINE_AA);
        break;
      case 1:
        cv::rectangle(canvas, random_point(rng, size), random_point(rng, size), colour, thickness,
                      cv::LINE_AA);
        break;
      case 2:
        cv::ellipse(canvas, random_point(rng, size),
                    {rng.uniform(scale / 40, scale / 5), rng.uniform(scale / 40, scale / 5)},
                    rng.uniform(0.0, 180.0), 0.0, 360.0, colour, thickness, cv::LINE_AA);
        break;
      default: {
        std::vector<cv::Point> polygon(static_cast<std::size_t>(rng.uniform(3, 7)));
        for (auto& p : polygon) {
          p = random_point(rng, size);
        }
        cv::fillPoly(canvas, std::vector<std::vector<cv::Point>>{polygon}, colour, cv::LINE_AA);
      }
    }
  }
}

void draw_lines(cv::Mat& canvas, cv::RNG& rng) {
  int lines = rng.uniform(3, 12);
  for (int i = 0; i < lines; ++i) {
    cv::line(canvas, random_point(rng, canvas.size()), random_point(rng, canvas.size()),
             random_colour(rng), rng.uniform(1, 5), cv::LINE_AA);
  }
}

void draw_text(cv::Mat& canvas, cv::RNG& rng, std::uint64_t index) {
  static constexpr const char* words[] = {"conveyor", "batch", "sample", "epoch",
                                          "shard",    "gpu",   "actor",  "credit"};
  int count = rng.uniform(1, 4);
  for (int i = 0; i < count; ++i) {
    std::string text = std::string(words[rng.uniform(0, 8)]) + " " + std::to_string(index);
    double font_scale = rng.uniform(0.5, 2.0) * canvas.cols / 500.0;
    cv::putText(canvas, text, random_point(rng, canvas.size()), rng.uniform(0, 8), font_scale,
                random_colour(rng), rng.uniform(1, 4), cv::LINE_AA);
  }
}

// Per-pixel sensor-like noise at full resolution: what makes decoding as costly as a photo's.
void add_fine_noise(cv::Mat& image, cv::RNG& rng) {
  // Uniform, not Gaussian: as good to the JPEG coder and four times cheaper to draw.
  cv::Mat noise(image.size(), CV_16SC3);
  rng.fill(noise, cv::RNG::UNIFORM, cv::Scalar::all(-10.0), cv::Scalar::all(11.0));
  cv::add(image, noise, image, cv::noArray(), CV_8U);
}

cv::Mat draw_image(std::uint64_t seed, std::uint64_t index, bool large) {
  cv::RNG rng(image_seed(seed, index));
  int min_side = large ? large_min_side : small_min_side;
  int max_side = large ? large_max_side : small_max_side;
  cv::Size size(rng.uniform(min_side, max_side + 1), rng.uniform(min_side, max_side + 1));
  double draw_scale =
      std::min(1.0, static_cast<double>(max_draw_side) / std::max(size.width, size.height));
  cv::Size draw_size(std::max(1, static_cast<int>(std::lround(size.width * draw_scale))),
                     std::max(1, static_cast<int>(std::lround(size.height * draw_scale))));

  cv::Mat canvas(draw_size, CV_32FC3);
  draw_gradient(canvas, rng);
  add_texture(canvas, rng);
  draw_shapes(canvas, rng);
  draw_lines(canvas, rng);
  draw_text(canvas, rng, index);

  cv::Mat image;
  canvas.convertTo(image, CV_8UC3);
  if (draw_size != size) {
    cv::resize(image, image, size, 0, 0, cv::INTER_LINEAR);
  }
  add_fine_noise(image, rng);
  return image;
}

expected<std::uint64_t> write_jpeg(const cv::Mat& image, const fs::path& path, int quality) {
  auto encoded = encode_jpeg(image, quality);
  if (!encoded) {
    return error(encoded.error().code(),
                 "cannot encode " + path.string() + " as JPEG: " + encoded.error().message());
  }
  const auto& bytes = *encoded;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  if (!file || std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size() ||
      std::fclose(file.release()) != 0) {
    return error(errc::io_error, "cannot write " + path.string());
  }
  return static_cast<std::uint64_t>(bytes.size());
}

/// The state the workers share: the next index to draw, results and the first error.
class generation {
 public:
  generation(layout where, const synthetic_options& options)
      : where_(std::move(where)),
        options_(options),
        is_large_(choose_large(options.count, options.large_fraction, options.seed)) {}

  void work() {
    for (;;) {
      std::uint64_t index = next_.fetch_add(1);
      if (index >= options_.count || failed_.load()) {
        return;
      }
      expected<std::uint64_t> written = make_one(index);
      std::lock_guard<std::mutex> lock(mutex_);
      if (written) {
        ++summary_.files;
        summary_.bytes += *written;
        summary_.large += is_large_[index] ? 1 : 0;
      } else if (!error_) {
        error_ = std::move(written).error();
        failed_.store(true);
      }
      changed_.notify_one();
    }
  }

  /// Waits until every worker has returned, reporting progress meanwhile.
  expected<synthetic_summary> wait(std::vector<std::thread>& workers,
                                   const synthetic_progress& progress) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      std::uint64_t reported = 0;
      while (!error_ && summary_.files < options_.count) {
        changed_.wait(lock);
        if (progress && summary_.files != reported) {
          reported = summary_.files;
          lock.unlock();
          progress(reported, options_.count);
          lock.lock();
        }
      }
    }
    for (auto& worker : workers) {
      worker.join();
    }
    if (error_) {
      return *error_;
    }
    return summary_;
  }

 private:
  expected<std::uint64_t> make_one(std::uint64_t index) {
    fs::path path = where_.image_path(index);
    try {
      return write_jpeg(draw_image(options_.seed, index, is_large_[index]), path, options_.quality);
    } catch (const cv::Exception& e) {
      return error(errc::io_error, "cannot draw " + path.string() + ": " + e.what());
    } catch (const std::bad_alloc&) {
      return error(errc::io_error, "out of memory drawing " + path.string());
    }
  }

  const layout where_;
  const synthetic_options options_;
  const std::vector<bool> is_large_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  synthetic_summary summary_;
  std::optional<error> error_;
};

}  // namespace

expected<synthetic_summary> generate_synthetic_images(const fs::path& dir,
                                                      const synthetic_options& options,
                                                      const synthetic_progress& progress) {
  if (auto valid = validate(options); !valid) {
    return std::move(valid).error();
  }
  layout where{dir, options.count, options.classes};
  if (auto prepared = prepare_directories(where); !prepared) {
    return std::move(prepared).error();
  }
  unsigned threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(
      std::min<std::uint64_t>(threads, std::max<std::uint64_t>(1, options.count)));

  generation run(where, options);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    try {
      workers.emplace_back([&run] { run.work(); });
    } catch (const std::system_error& e) {
      // Fewer threads only make it slower; none at all is an error.
      if (workers.empty()) {
        return error(errc::io_error, std::string("cannot start a worker thread: ") + e.what());
      }
      break;
    }
  }
  return run.wait(workers, progress);
}

}  // namespace conveyor

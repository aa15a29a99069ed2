#pragma once
// The draws a reference recipe made, replayed into a chain (core/transforms/step_draws.hpp):
// chain_probe reads them from a file of "site value" lines, in the reference's order; a site
// asked for out of turn, a value out of its range, or more draws than the file holds throw,
// naming the draw. The value of an array of standard normals ("noise.z",
// "dither") is the path of a file of little-endian float64 normals.
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/storage/byte_source.hpp"
#include "core/transforms/step_draws.hpp"

namespace conveyor::testing {

class scripted_draws final : public step_draws {
 public:
  explicit scripted_draws(const std::string& path) {
    std::ifstream in(path);
    std::string site, value;
    while (in >> site >> value) {
      script_.emplace_back(site, value);
    }
  }
  double random(std::string_view site) override { return real(site, 0.0, 1.0); }
  std::int64_t randrange(std::string_view site, std::int64_t n) override {
    return integer(site, 0, n);
  }
  std::int64_t randint(std::string_view site, std::int64_t low, std::int64_t high) override {
    return integer(site, low, high);
  }
  std::int64_t choice_index(std::string_view site, std::int64_t n) override {
    return integer(site, 0, n);
  }
  double uniform(std::string_view site, double low, double high) override {
    return real(site, low, high);
  }
  void standard_normals(std::string_view site, double* out, std::size_t n) override {
    if (normals_site_ != site) {
      normals_ = file_doubles(next(site));
      normals_site_ = std::string(site);
      normals_at_ = 0;
    }
    if (normals_at_ + n > normals_.size()) {
      fail(site, "more normals asked than the reference drew");
    }
    std::memcpy(out, normals_.data() + normals_at_, n * sizeof(double));
    normals_at_ += n;
  }
  /// Every draw taken, every normal used.
  bool exhausted() const { return at_ == script_.size() && normals_at_ == normals_.size(); }

 private:
  [[noreturn]] void fail(std::string_view site, const std::string& what) const {
    throw std::runtime_error("draw " + std::to_string(at_) + " (" + std::string(site) +
                             "): " + what);
  }
  const std::string& next(std::string_view site) {
    if (at_ >= script_.size()) {
      fail(site, "the script is exhausted");
    }
    if (script_[at_].first != site) {
      fail(site, "the reference drew " + script_[at_].first + " here");
    }
    return script_[at_++].second;
  }
  // A closed range: the reference's float32 uniform may round to its upper end.
  double real(std::string_view site, double low, double high) {
    double v = std::stod(next(site));
    if (!(v >= low && v <= high)) {
      fail(site, std::to_string(v) + " outside its range");
    }
    return v;
  }
  std::int64_t integer(std::string_view site, std::int64_t low, std::int64_t high) {
    auto v = std::stoll(next(site));
    if (v < low || v >= high) {
      fail(site, std::to_string(v) + " outside [" + std::to_string(low) + ", " +
                     std::to_string(high) + ")");
    }
    return v;
  }
  static std::vector<double> file_doubles(const std::string& path) {
    auto bytes = read_whole_file(path);
    if (!bytes) {
      throw std::runtime_error(bytes.error().what());
    }
    std::vector<double> out(bytes->size() / sizeof(double));
    std::memcpy(out.data(), bytes->data(), out.size() * sizeof(double));
    return out;
  }

  std::vector<std::pair<std::string, std::string>> script_;
  std::size_t at_ = 0;
  std::vector<double> normals_;
  std::string normals_site_;
  std::size_t normals_at_ = 0;
};

}  // namespace conveyor::testing

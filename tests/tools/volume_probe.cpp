// volume_probe: runs the transform chain of a volume topology (config/examples/
// unet3d-kits19.toml) on cases given as .npy pairs, each with the random draws the reference
// made for it, and writes what comes out; the exactness test
// (tests/python/test_unet3d_exact.py) holds it against the MLPerf reference's transforms.
//
//   volume_probe TOPOLOGY LIST
//
// LIST: one trial a line, "X.npy Y.npy DRAWS OUT P0 P1 P2": the case's image and label, the
// draws (one "site value" a line in the reference's order; the value of a "noise.z" line is the
// path of a file of little-endian float64 standard normals), where to write the result
// (OUT_x.npy and OUT_y.npy), and the crop's patch size. The chain must take every draw, site
// for site, and no more. Exit 1 on the first trial that fails, naming it; 2 on a bad command
// line or topology.
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "config/load_topology.hpp"
#include "core/codecs/npy_writer.hpp"
#include "core/storage/byte_source.hpp"
#include "core/storage/record_parts.hpp"
#include "core/transforms/transform_chain.hpp"

namespace {

using namespace conveyor;

/// The draws of one trial, replayed in order; a site asked for out of turn or a value out of
/// its range throws, naming the draw.
class scripted_draws final : public volume_draws {
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
    return integer(site, n);
  }
  std::int64_t choice_index(std::string_view site, std::int64_t n) override {
    return integer(site, n);
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
  double real(std::string_view site, double low, double high) {
    double v = std::stod(next(site));
    if (!(v >= low && v < high)) {
      fail(site, std::to_string(v) + " outside its range");
    }
    return v;
  }
  std::int64_t integer(std::string_view site, std::int64_t n) {
    auto v = std::stoll(next(site));
    if (v < 0 || v >= n) {
      fail(site, std::to_string(v) + " outside [0, " + std::to_string(n) + ")");
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

struct trial {
  std::string x, y, draws, out;
  std::array<std::int64_t, 3> patch{};
};

// The chain of `topology` with its crop's patch set to `patch`.
expected<transform_chain> chain_for(std::vector<transform_spec> specs,
                                    const std::array<std::int64_t, 3>& patch) {
  for (auto& spec : specs) {
    if (auto* crop = std::get_if<rand_balanced_crop_spec>(&spec)) {
      crop->size = patch;
    }
  }
  return transform_chain::build(specs);
}

void run(const std::vector<transform_spec>& specs, const trial& t, std::uint64_t id) {
  auto chain = chain_for(specs, t.patch);
  if (!chain) {
    throw std::runtime_error(chain.error().what());
  }
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  for (const auto& [name, path] : {std::pair{"x.npy", t.x}, std::pair{"y.npy", t.y}}) {
    auto bytes = read_whole_file(path);
    if (!bytes) {
      throw std::runtime_error(bytes.error().what());
    }
    parts.emplace_back(name, std::move(*bytes));
  }
  sample_state s;
  s.sample_id = id;
  s.key = t.x;
  s.encoded = encode_parts(parts);
  s.multipart = true;
  chain->start(s, 0);
  auto draws = std::make_shared<scripted_draws>(t.draws);
  s.given_draws = draws;
  if (auto ok = chain->run_all(s); !ok) {
    throw std::runtime_error(ok.error().what());
  }
  if (!draws->exhausted()) {
    throw std::runtime_error("the chain took fewer draws than the reference made");
  }
  auto fields = chain->take_fields(s);
  if (!fields) {
    throw std::runtime_error(fields.error().what());
  }
  for (const auto& [field, suffix] : {std::pair{"image", "_x.npy"}, std::pair{"label", "_y.npy"}}) {
    if (auto ok = write_npy(t.out + suffix, (*fields)[*chain->schema().index_of(field)]); !ok) {
      throw std::runtime_error(ok.error().what());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: volume_probe TOPOLOGY LIST\n";
    return 2;
  }
  auto topology = load_topology_file(argv[1], {});
  if (!topology) {
    std::cerr << topology.error().what() << "\n";
    return 2;
  }
  std::ifstream list(argv[2]);
  std::string line;
  for (std::uint64_t id = 0; std::getline(list, line); ++id) {
    std::istringstream fields(line);
    trial t;
    fields >> t.x >> t.y >> t.draws >> t.out >> t.patch[0] >> t.patch[1] >> t.patch[2];
    try {
      run(topology->transforms, t, id);
    } catch (const std::exception& e) {
      std::cerr << "trial " << id << " (" << t.draws << "): " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

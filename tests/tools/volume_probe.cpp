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
#include "scripted_draws.hpp"

namespace {

using namespace conveyor;

using testing::scripted_draws;

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

// transform_probe: runs the transform chain of a topology on image files, as a node's
// preprocessors do, and writes what comes out; the parity test (tests/python/test_parity.py)
// holds it against torchvision.
//
//   transform_probe TOPOLOGY LIST OUT
//
// LIST: one image a line, "PATH" or "PATH LEFT TOP WIDTH HEIGHT": the box random_resized_crop
// takes (and a scaled decode plans for) instead of drawing one (sample_state::given_box).
// Each sample's "image" field (CHW, the chain's dtype) is appended to OUT; one line a sample
// on stdout: "CHANNELS HEIGHT WIDTH DTYPE". Sample i has id i and epoch seed 0 (a flip with
// 0 < p < 1 draws from them). Exit 1 on the first sample that fails, naming it; 2 on a bad
// command line or topology.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "topology_chain.hpp"

namespace {

using namespace conveyor;

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The sample of one LIST line: its file's bytes and, when given, the crop box.
sample_state sample_of(const transform_chain& chain, const std::string& line, std::uint64_t id) {
  std::istringstream fields(line);
  std::string path;
  fields >> path;
  sample_state s;
  s.sample_id = id;
  s.key = path;
  s.encoded = file_bytes(path);
  chain.start(s, 0);
  crop_box box;
  if (fields >> box.left >> box.top >> box.width >> box.height) {
    s.given_box = box;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: transform_probe TOPOLOGY LIST OUT\n";
    return 2;
  }
  auto chain = testing::topology_chain(argv[1]);
  if (!chain) {
    return 2;
  }
  std::ifstream list(argv[2]);
  std::ofstream out(argv[3], std::ios::binary);
  std::string line;
  for (std::uint64_t id = 0; std::getline(list, line); ++id) {
    auto s = sample_of(*chain, line, id);
    if (auto ok = chain->run_all(s); !ok) {
      std::cerr << ok.error().what() << "\n";
      return 1;
    }
    auto fields = chain->take_fields(s);
    if (!fields) {
      std::cerr << fields.error().what() << "\n";
      return 1;
    }
    const auto& t = (*fields)[*chain->schema().index_of("image")];
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
    std::cout << t.extent(0) << " " << t.extent(1) << " " << t.extent(2) << " " << name_of(t.type)
              << "\n";
  }
  return 0;
}

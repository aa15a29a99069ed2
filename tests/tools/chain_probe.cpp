// chain_probe: runs the transform chain of a topology on records made of given files, with the
// random draws a reference made (or the chain's own), and writes every field that comes out;
// the exactness tests hold it against the MLPerf references: UNet3D
// (tests/python/test_unet3d_exact.py) and RNN-T (tests/python/test_rnnt_exact.py, with
// torchaudio).
//
//   chain_probe TOPOLOGY LIST
//
// LIST: one sample a line, "DRAWS OUT PART=FILE [PART=FILE ...]": the draws ("-": the chain's
// own generators, for sample id = the line's number, epoch seed 0; otherwise a file of "site
// value" lines in the reference's order, tests/tools/scripted_draws.hpp), where to write, and
// the record's parts (part name = the file whose bytes it holds, e.g. flac=utt.flac). Each
// field of the chain's schema goes to OUT.<field>.npy (a byte string as uint8); a sample the
// chain refuses writes its error to OUT.error instead (the draws must then not be checked).
// With scripted draws the chain must take every draw, site for site, and no more. Exit 1 on a
// sample whose draws do not replay, naming it; 2 on a bad command line or topology.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/codecs/npy_writer.hpp"
#include "core/storage/byte_source.hpp"
#include "core/storage/record_parts.hpp"
#include "scripted_draws.hpp"
#include "topology_chain.hpp"

namespace {

using namespace conveyor;

struct trial {
  std::string draws;
  std::string out;
  std::vector<std::pair<std::string, std::string>> parts;  ///< (part name, file)
};

trial parse(const std::string& line) {
  std::istringstream words(line);
  trial t;
  words >> t.draws >> t.out;
  for (std::string part; words >> part;) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      throw std::runtime_error("'" + part + "' is not PART=FILE");
    }
    t.parts.emplace_back(part.substr(0, eq), part.substr(eq + 1));
  }
  return t;
}

void write_error(const trial& t, const std::string& message) {
  std::ofstream(t.out + ".error") << message << "\n";
}

void run(const transform_chain& chain, const trial& t, std::uint64_t id) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> parts;
  for (const auto& [name, path] : t.parts) {
    auto bytes = read_whole_file(path);
    if (!bytes) {
      throw std::runtime_error(bytes.error().what());
    }
    parts.emplace_back(name, std::move(*bytes));
  }
  sample_state s;
  s.sample_id = id;
  s.key = t.out;
  s.encoded = encode_parts(parts);
  s.multipart = true;
  chain.start(s, 0);
  std::shared_ptr<testing::scripted_draws> draws;
  if (t.draws != "-") {
    draws = std::make_shared<testing::scripted_draws>(t.draws);
    s.given_draws = draws;
  }
  if (auto ok = chain.run_all(s); !ok) {
    write_error(t, ok.error().what());
    return;
  }
  if (draws && !draws->exhausted()) {
    throw std::runtime_error("the chain took fewer draws than the reference made");
  }
  auto fields = chain.take_fields(s);
  if (!fields) {
    write_error(t, fields.error().what());
    return;
  }
  const auto& schema = chain.schema();
  for (std::size_t i = 0; i < schema.fields.size(); ++i) {
    if (auto ok = write_npy(t.out + "." + schema.fields[i].name + ".npy", (*fields)[i]); !ok) {
      throw std::runtime_error(ok.error().what());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: chain_probe TOPOLOGY LIST\n";
    return 2;
  }
  auto chain = testing::topology_chain(argv[1]);
  if (!chain) {
    return 2;
  }
  std::ifstream list(argv[2]);
  std::string line;
  for (std::uint64_t id = 0; std::getline(list, line); ++id) {
    try {
      run(*chain, parse(line), id);
    } catch (const std::exception& e) {
      std::cerr << "sample " << id << " (" << line << "): " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

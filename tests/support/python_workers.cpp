#include "support/python_workers.hpp"

#include <gtest/gtest.h>

#include "core/base/little_endian.hpp"
#include "support/app_process.hpp"

namespace conveyor::testing {

std::filesystem::path write_python_setup(const temp_dir& dir, const std::string& module,
                                         const std::string& source, const std::string& cls,
                                         const std::string& init_fn) {
  write_file(dir / (module + ".py"), {source.begin(), source.end()});
  const auto out = dir / (module + "." + cls + init_fn + ".setup");
  auto r = run_app(CONVEYOR_PYTHON, dir,
                   std::string(CONVEYOR_SOURCE_DIR) + "/tests/python/worker_setup.py " +
                       dir.path().string() + " " + module + " " + cls + " " + out.string() + " " +
                       init_fn);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

std::vector<std::uint8_t> sampler_order_bytes(const std::vector<std::uint64_t>& order) {
  std::vector<std::uint8_t> bytes(order.size() * 8);
  for (std::size_t j = 0; j < order.size(); ++j) {
    little_endian::store(bytes.data() + 8 * j, order[j]);
  }
  return bytes;
}

std::string python_worker_script() {
  return std::string(CONVEYOR_SOURCE_DIR) + "/python/conveyor_worker.py";
}

worker_launch python_worker_launch(const temp_dir& dir, const std::string& module,
                                   const std::string& source, const std::string& cls,
                                   const std::string& init_fn) {
  worker_launch l;
  l.python = CONVEYOR_PYTHON;
  l.script = python_worker_script();
  l.setup = std::make_shared<std::vector<std::uint8_t>>(
      read_file(write_python_setup(dir, module, source, cls, init_fn)));
  return l;
}

}  // namespace conveyor::testing

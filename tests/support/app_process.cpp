#include "support/app_process.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace conveyor::testing {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

run_result run_app(const std::string& binary, const temp_dir& dir, const std::string& args) {
  auto out = dir / "stdout";
  auto err = dir / "stderr";
  auto cmd = binary + " " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::filesystem::path write_topology(const temp_dir& dir, const std::string& text) {
  auto path = dir / "node.toml";
  std::ofstream(path) << text;
  return path;
}

std::uint64_t json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":([0-9.e+-]+)");
  EXPECT_TRUE(std::regex_search(json, m, re)) << key << " missing in " << json;
  return m.empty() ? 0 : static_cast<std::uint64_t>(std::stod(m[1].str()));
}

namespace {

// One read from `fd` into `text`; false at EOF or past the deadline.
bool read_some(int fd, std::string& text, std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  pollfd p{fd, POLLIN, 0};
  if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
    return false;
  }
  char buf[4096];
  auto n = read(fd, buf, sizeof buf);
  if (n <= 0) {
    return false;
  }
  text.append(buf, static_cast<std::size_t>(n));
  return true;
}

}  // namespace

app_process::app_process(const std::string& binary, std::vector<std::string> args) {
  int out[2];
  int err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_ = out[0];
  err_ = err[0];
}

app_process::~app_process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  close(out_);
  close(err_);
}

bool app_process::wait_for_log(const std::string& needle, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (err_text_.find(needle) == std::string::npos) {
    if (!read_some(err_, err_text_, deadline)) {
      return false;
    }
  }
  return true;
}

int app_process::finish(std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (read_some(out_, out_text_, deadline)) {
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    return -1;
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void app_process::signal(int sig) const {
  kill(pid_, sig);
}

}  // namespace conveyor::testing

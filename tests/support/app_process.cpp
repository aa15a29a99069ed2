#include "support/app_process.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
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

std::vector<double> json_array(const std::string& json, const std::string& key) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"" + key + "\":\\[([^\\]]*)\\]")))
      << key << " missing in " << json;
  std::vector<double> out;
  std::string items = m.empty() ? "" : m[1].str();
  std::regex number("[0-9.e+-]+");
  for (auto it = std::sregex_iterator(items.begin(), items.end(), number);
       it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod(it->str()));
  }
  return out;
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

std::vector<std::uint16_t> free_tcp_ports(int count) {
  // Below Linux's ephemeral range (32768-60999), so that no outgoing connection takes a port
  // between this check and the node's listen.
  std::random_device rd;
  std::vector<std::uint16_t> out;
  while (static_cast<int>(out.size()) < count) {
    auto port = static_cast<std::uint16_t>(20000 + rd() % 12000);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (free && std::find(out.begin(), out.end(), port) == out.end()) {
      out.push_back(port);
    }
  }
  return out;
}

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
  // Both pipes to their ends: a child blocked on a full stderr would never close stdout.
  bool out_open = true;
  bool err_open = true;
  while ((out_open || err_open) && std::chrono::steady_clock::now() < deadline) {
    pollfd p[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (poll(p, 2, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0) {
      break;
    }
    out_open = out_open && (p[0].revents == 0 || read_some(out_, out_text_, deadline));
    err_open = err_open && (p[1].revents == 0 || read_some(err_, err_text_, deadline));
  }
  if (out_open || err_open) {
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

#include "support/app_process.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

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

// Held by a reading thread while it grows a text (allocates), and across every fork() of this
// process (pthread_atfork): a child a test forks to run code in (a client) never starts with
// an allocator lock that a reader held at that moment. glibc's malloc guards fork itself; the
// AddressSanitizer of GCC 12 does not.
std::mutex& growing() {
  static std::mutex m;
  return m;
}

void guard_forks() {
  static const int registered = pthread_atfork([] { growing().lock(); }, [] { growing().unlock(); },
                                               [] { growing().unlock(); });
  EXPECT_EQ(registered, 0);
}

// One read from `fd` into `text` (under `mutex`); false at EOF or on an error.
bool read_some(int fd, std::string& text, std::mutex& mutex) {
  char buf[4096];
  auto n = read(fd, buf, sizeof buf);
  if (n <= 0) {
    return n < 0 && errno == EINTR;
  }
  std::lock_guard<std::mutex> grow(growing());
  std::lock_guard<std::mutex> lock(mutex);
  text.append(buf, static_cast<std::size_t>(n));
  return true;
}

// A pipe whose ends this process does not pass to the apps it starts.
std::pair<unique_fd, unique_fd> cloexec_pipe() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

}  // namespace

app_process::app_process(const std::string& binary, std::vector<std::string> args) {
  auto [out_read, out_write] = cloexec_pipe();
  auto [err_read, err_write] = cloexec_pipe();
  std::tie(stop_read_, stop_write_) = cloexec_pipe();
  // Built before the fork: the child only duplicates descriptors and execs (this process's
  // other threads, the readers of apps started before, may hold the allocator's lock).
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out_write.get(), 1);  // dup2 clears close-on-exec on 1 and 2
    dup2(err_write.get(), 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  out_ = std::move(out_read);
  err_ = std::move(err_read);
  guard_forks();
  reader_ = std::thread([this] { read_output(); });
}

app_process::~app_process() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // A grandchild the app left behind may hold its pipes open: the reader is told to stop.
  const char stop = 1;
  EXPECT_EQ(write(stop_write_.get(), &stop, 1), 1);
  reader_.join();
}

void app_process::read_output() {
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    pollfd p[3] = {{out_open ? out_.get() : -1, POLLIN, 0},
                   {err_open ? err_.get() : -1, POLLIN, 0},
                   {stop_read_.get(), POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (p[2].revents != 0) {
      break;
    }
    out_open = out_open && (p[0].revents == 0 || read_some(out_.get(), out_text_, mutex_));
    err_open = err_open && (p[1].revents == 0 || read_some(err_.get(), err_text_, mutex_));
    grew_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  grew_.notify_all();
}

bool app_process::wait_for_log(const std::string& needle, std::chrono::seconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return grew_.wait_for(lock, limit, [&] {
    return err_text_.find(needle) != std::string::npos || ended_;
  }) && err_text_.find(needle) != std::string::npos;
}

int app_process::finish(std::chrono::seconds limit) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!grew_.wait_for(lock, limit, [&] { return ended_; })) {
      return -1;
    }
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string app_process::out() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return out_text_;
}

std::string app_process::err() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return err_text_;
}

void app_process::signal(int sig) const {
  kill(pid_, sig);
}

}  // namespace conveyor::testing

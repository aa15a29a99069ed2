#include "support/serving_node.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace conveyor::testing {

std::string serving_topology(const temp_dir& dir, int gpus, int jobs, int images, int epochs,
                             const std::string& serve_extra) {
  auto text = "gpus = " + std::to_string(gpus) + "\n[dataset]\npath = \"" +
              make_image_folder(dir, images).string() +
              "\"\nformat = \"folder\"\n"
              "[pipeline]\nbatch_size = 4\nprefetch_batches = 2\npreprocessors = 2\n"
              "[trainer]\nepochs = " +
              std::to_string(epochs) + "\n[monitor]\ninterval_ms = 10000\n[serve]\nsocket = \"" +
              (dir / "node.sock").string() + "\"\njobs = " + std::to_string(jobs) + "\n" +
              serve_extra +
              "\n[[transform]]\nop = \"decode\"\n"
              "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
              "[[transform]]\nop = \"flip\"\n"
              "[[transform]]\nop = \"normalize\"\n";
  auto path = dir / "node.toml";
  std::ofstream(path) << text;
  return path.string();
}

int process::wait(int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  bool ended = ::poll(&p, 1, timeout_ms) == 1;
  if (!ended) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(pidfd);
  if (!ended) {
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

namespace {

process watch(pid_t pid) {
  return {pid, static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
}

}  // namespace

process start_node(const temp_dir& dir, const std::string& topology_file, int max_fds) {
  auto out = (dir / "node.out").string();
  auto err = (dir / "node.err").string();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (max_fds > 0) {
      rlimit limit{static_cast<rlim_t>(max_fds), static_cast<rlim_t>(max_fds)};
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    std::freopen(out.c_str(), "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(CONVEYOR_NODE_BIN, CONVEYOR_NODE_BIN, "--topology", topology_file.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return watch(pid);
}

std::string file_text(const temp_dir& dir, const std::string& name) {
  std::ifstream in(dir / name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string node_story(const temp_dir& dir) {
  return file_text(dir, "node.out") + file_text(dir, "node.err");
}

std::string json_field(const std::string& json, const std::string& key) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"" + key + "\":(\\[[^\\]]*\\]|[^,}]+)")))
      << key << " missing in " << json;
  return m.empty() ? "" : m[1].str();
}

client_options patient() {
  client_options o;
  o.attach_timeout_s = 60;  // the node may still be starting
  o.next_timeout_s = 60;
  return o;
}

std::string consume_all(const std::string& socket, int rank, int job,
                        const client_options& options) {
  auto feed = client::attach(socket, rank, job, options);
  if (!feed) {
    return "error " + feed.error().what() + "\n";
  }
  std::ostringstream out;
  for (auto e = feed->info().start_epoch; e < feed->epochs(); ++e) {
    auto range = feed->epoch(e);
    for (auto& b : range) {
      for (auto id : b.sample_ids()) {
        out << b.epoch() << " " << id << "\n";
      }
    }
    if (range.error()) {
      out << "error " << range.error()->what() << "\n";
    }
  }
  return out.str();
}

std::string child::collect(int exit_code) {
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(read_end, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(read_end);
  EXPECT_EQ(proc.wait(60000), exit_code);
  return text;
}

child fork_child(std::string (*run)(void*, int), void* work) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    auto text = run(work, fds[1]);
    auto written = ::write(fds[1], text.data(), text.size());
    ::_exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  return {watch(pid), fds[0]};
}

epoch_ids parse_ids(const std::string& text) {
  std::istringstream in(text);
  return read_ids(in);
}

int open_descriptors(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

double peak_rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stod(line.substr(6)) / 1024.0;
    }
  }
  return -1;
}

}  // namespace conveyor::testing

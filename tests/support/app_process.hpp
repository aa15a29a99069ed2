#pragma once
/// Running Conveyor's apps as operators do, for tests: the real binary as a child process,
/// its output captured as it comes. Every wait is bounded: an app that does not stop fails the test
/// instead of hanging it.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/unique_fd.hpp"
#include "support/loopback_tcp.hpp"

#include "support/test_support.hpp"

namespace conveyor::testing {

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// The whole text of a file ("" when it does not open).
std::string slurp(const std::filesystem::path& p);

/// Runs `binary args` (a shell command line) to its end, stdout and stderr into files in `dir`.
run_result run_app(const std::string& binary, const temp_dir& dir, const std::string& args);

/// Writes `text` to dir/node.toml and returns its path.
std::filesystem::path write_topology(const temp_dir& dir, const std::string& text);

/// The number after "key": in a JSON line (a failed expectation when it is missing).
std::uint64_t json_number(const std::string& json, const std::string& key);
/// The numbers of the array after "key": in a JSON line (a failed expectation when it is
/// missing).
std::vector<double> json_array(const std::string& json, const std::string& key);

/// An app started as a child process, its stdout and stderr on pipes that a thread of this
/// process reads as the app writes them: an app is never held up by a full pipe while the test
/// waits on something else (one node of a cluster finishing while the other still logs).
/// Killed (SIGKILL) and reaped on destruction if still running.
class app_process {
 public:
  app_process(const std::string& binary, std::vector<std::string> args);
  ~app_process();
  app_process(const app_process&) = delete;
  app_process& operator=(const app_process&) = delete;

  /// Waits until `needle` is in what the app wrote to stderr; false when stderr ends without
  /// it or after `limit`.
  bool wait_for_log(const std::string& needle, std::chrono::seconds limit);
  /// Waits for stdout and stderr to end, then reaps the process: its exit code, or -1 (killed,
  /// or still running after `limit`).
  int finish(std::chrono::seconds limit);
  void signal(int sig) const;
  pid_t pid() const noexcept { return pid_; }
  /// What the app wrote to stdout (stderr) so far: all of it once finish() returned.
  std::string out() const;
  std::string err() const;

 private:
  // The reading thread: both pipes into the texts until both end or stop_ is written to.
  void read_output();

  pid_t pid_ = -1;
  unique_fd out_;
  unique_fd err_;
  unique_fd stop_read_;
  unique_fd stop_write_;
  mutable std::mutex mutex_;
  std::condition_variable grew_;  ///< a text grew, or both pipes ended
  std::string out_text_;
  std::string err_text_;
  bool ended_ = false;  ///< both pipes ended
  std::thread reader_;
};

}  // namespace conveyor::testing

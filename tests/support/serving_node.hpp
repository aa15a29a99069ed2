#pragma once
/// conveyor-node serving trainer processes, as tests run it: the real node binary with its
/// stdout (the JSON line) and stderr in files, clients in their own processes (forked), real
/// Unix sockets and shared memory. Every wait is bounded by a client's own timeouts or a
/// deadline on a process's exit; nothing sleeps.

#include <sys/types.h>

#include <conveyor/client.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "support/test_support.hpp"

namespace conveyor::testing {

/// A served node's topology in `dir`/node.toml: an image folder of `images` JPEGs, batch 4,
/// 2 prefetched batches, `epochs` epochs, `gpus` host ranks, `jobs` jobs, serving on
/// `dir`/node.sock; `serve_extra` lines are added to [serve]. Returns its path.
std::string serving_topology(const temp_dir& dir, int gpus, int jobs, int images, int epochs,
                             const std::string& serve_extra = "");

/// A process started with fork/exec; its pid and, for a bounded wait, its pidfd.
struct process {
  pid_t pid = -1;
  int pidfd = -1;

  /// Exit code (128 + signal when killed), or -1 when it did not end within `timeout_ms` (then
  /// it is killed, so that a failed test leaves no process behind).
  int wait(int timeout_ms);
};

/// The node on `topology_file`, its stdout into `dir`/node.out, stderr into `dir`/node.err;
/// `max_fds` > 0 caps its descriptors (RLIMIT_NOFILE).
process start_node(const temp_dir& dir, const std::string& topology_file, int max_fds = 0);

/// The text of `dir`/`name` ("" when missing).
std::string file_text(const temp_dir& dir, const std::string& name);
/// What a node that did not end as expected said (its stdout and stderr).
std::string node_story(const temp_dir& dir);
/// The value text after "key": in a JSON line (a failed expectation when it is missing).
std::string json_field(const std::string& json, const std::string& key);

/// Client options that wait for a node still starting.
client_options patient();

/// "epoch id" lines of every sample rank `rank` of job `job` consumed (released), to the end
/// of its epochs; "error ..." lines for what went wrong.
std::string consume_all(const std::string& socket, int rank, int job,
                        const client_options& options = patient());

/// Work run in a child process; its text comes back through a pipe.
struct child {
  process proc;
  int read_end = -1;

  /// Reads what the child wrote until it closed the pipe; then it must exit with `exit_code`.
  std::string collect(int exit_code = 0);
};

/// Forks a child that runs `work(pipe's write end)` and writes the text it returns to the pipe.
template <class Work>
child spawn_client(Work work);

/// Sample ids by epoch from "epoch id" lines.
epoch_ids parse_ids(const std::string& text);

/// Descriptors process `pid` has open (its /proc entry), -1 when it cannot be read.
int open_descriptors(pid_t pid);
/// The peak resident memory of process `pid` in MiB (VmHWM), -1 when it cannot be read.
double peak_rss_mib(pid_t pid);

// --- template definitions ------------------------------------------------------------------

child fork_child(std::string (*run)(void*, int), void* work);

template <class Work>
child spawn_client(Work work) {
  return fork_child([](void* w, int out) { return (*static_cast<Work*>(w))(out); }, &work);
}

}  // namespace conveyor::testing

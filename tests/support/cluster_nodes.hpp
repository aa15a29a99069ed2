#pragma once
/// Clusters of conveyor-node processes on loopback, for the tests that run them
/// (test_node_peers, test_node_peer_transport, test_node_peer_trust): a shared topology,
/// nodes started by rank, certificates made with openssl's command line, and what the tests
/// read off a node (its JSON line's sums, its resident memory).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "support/node_app.hpp"

namespace conveyor::testing {

inline constexpr int cluster_epochs = 3;

/// "127.0.0.1:port" for each of `ports`: nodes on the loopback interface.
inline std::vector<std::string> loopback(const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> out;
  for (auto port : ports) {
    out.push_back("127.0.0.1:" + std::to_string(port));
  }
  return out;
}

/// "peers = [...]" for nodes at `addresses` ("host:port").
inline std::string peers_key(const std::vector<std::string>& addresses) {
  std::string out = "peers = [";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    out += (i == 0 ? "\"" : ", \"") + addresses[i] + "\"";
  }
  return out + "]\n";
}

/// The topology every node of a cluster of nodes at `addresses` shares, over the dataset at
/// `dataset` (`format`: "folder" or "shards"); `cluster` adds keys to [cluster]. A cache that
/// alone could hold the set: together, the nodes' partitions cover it.
inline std::filesystem::path cluster_topology(const temp_dir& dir,
                                              const std::filesystem::path& dataset,
                                              const std::vector<std::string>& addresses,
                                              const std::string& cluster = "peer_wait_s = 60\n",
                                              const std::string& format = "folder") {
  return write_topology(
      dir, "gpus = 1\n[dataset]\npath = \"" + dataset.string() + "\"\nformat = \"" + format +
               "\"\nseed = 5\n"
               // The window these tests were written for ((prefetch 2 + 1) x batch 2): the default
               // one reaches into the next epoch before the holders have cached this one.
               "[pipeline]\nbatch_size = 2\npreprocessors = 1\nwindow_samples = 6\n"
               "[trainer]\nstep_ms = 10\nepochs = " +
               std::to_string(cluster_epochs) +
               "\n[monitor]\ninterval_ms = 50\n"
               "[cache]\nmemory = \"1G\"\n"
               "[cluster]\nworld = " +
               std::to_string(addresses.size()) + "\n" + peers_key(addresses) +
               // Generous: a loaded CI machine must not turn a slow answer into a fallback.
               "peer_timeout_ms = 10000\n" + cluster +
               "[[transform]]\nop = \"decode\"\n"
               "[[transform]]\nop = \"random_resized_crop\"\nsize = 16\n"
               "[[transform]]\nop = \"to_uint8\"\n");
}

/// Where node `rank` writes the ids its trainer received (trainer.ids_file).
inline std::filesystem::path ids_of(const temp_dir& dir, int rank) {
  return dir / ("ids-" + std::to_string(rank));
}

/// Node `rank` of the cluster of `file`, with `extra` arguments.
inline std::unique_ptr<node_process> start_node(const temp_dir& dir,
                                                const std::filesystem::path& file, int rank,
                                                std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--topology", file.string(),
                                "--set",      "cluster.rank=" + std::to_string(rank),
                                "--set",      "trainer.ids_file=" + ids_of(dir, rank).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<node_process>(std::move(args));
}

/// On leaving a test that has failed (an ASSERT's return included): each node's [cluster] log
/// lines, on stderr. A cluster's failure is often told by a node whose own checks passed (the
/// peer that lost a connection). Declared after the nodes, so that it outlives none of them.
class cluster_logs_on_failure {
 public:
  explicit cluster_logs_on_failure(const std::vector<std::unique_ptr<node_process>>& nodes)
      : nodes_(nodes) {}
  cluster_logs_on_failure(const cluster_logs_on_failure&) = delete;
  cluster_logs_on_failure& operator=(const cluster_logs_on_failure&) = delete;
  ~cluster_logs_on_failure() {
    if (!::testing::Test::HasFailure()) {
      return;
    }
    for (std::size_t rank = 0; rank < nodes_.size(); ++rank) {
      std::cerr << "rank " << rank << "'s [cluster] lines:\n";
      std::istringstream lines(nodes_[rank]->err());
      for (std::string line; std::getline(lines, line);) {
        if (line.find("[cluster]") != std::string::npos) {
          std::cerr << "  " << line << "\n";
        }
      }
    }
  }

 private:
  const std::vector<std::unique_ptr<node_process>>& nodes_;
};

inline double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

/// A certificate authority and a node certificate it signed, in `dir` (openssl's command line).
inline void make_certificates(const temp_dir& dir, const std::string& name) {
  auto run = [&](const std::string& cmd) {
    ASSERT_EQ(std::system((cmd + " 2>/dev/null >/dev/null").c_str()), 0) << cmd;
  };
  auto at = [&](const std::string& file) { return (dir / (name + file)).string(); };
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + name + "-ca -keyout " +
      at("-ca.key") + " -out " + at("-ca.pem"));
  run("openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + at(".key") + " -out " +
      at(".csr"));
  run("openssl x509 -req -days 2 -in " + at(".csr") + " -CA " + at("-ca.pem") + " -CAkey " +
      at("-ca.key") + " -CAcreateserial -out " + at(".pem"));
}

/// The --set arguments for TLS with the certificate `name` of the authority `ca`.
inline std::vector<std::string> tls_args(const temp_dir& dir, const std::string& name,
                                         const std::string& ca) {
  return {"--set", "cluster.tls_certificate=" + (dir / (name + ".pem")).string(),
          "--set", "cluster.tls_key=" + (dir / (name + ".key")).string(),
          "--set", "cluster.tls_cafile=" + (dir / (ca + "-ca.pem")).string()};
}

/// The resident memory of process `pid` in bytes (VmRSS of /proc/pid/status); 0 when it
/// cannot be read.
inline std::uint64_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

}  // namespace conveyor::testing

#pragma once
/// The node's HTTP endpoint for operators (`[monitor] metrics = "host:port"`): a few GET routes,
/// each answered with what its renderer returns at that request: /metrics (Prometheus' text
/// exposition, core/observe/node_exposition.hpp), / (the live page, core/observe/live_page.hpp)
/// and /state.json (what the page draws, core/observe/node_state.hpp). Any other path is 404.
///
/// It listens on the one address given, on threads of its own (cpp-httplib's listener and
/// `workers` that serve), so no actor ever waits for a client. What a client can take is
/// bounded: `workers` connections served at once and `queued` accepted ones waiting (the
/// listener stops accepting while they are full; the kernel's backlog holds the rest), one
/// request per connection, a request head of at most cpp-httplib's 8 KiB, a body of at most
/// 1 KiB (refused with 413), each read and write given up after `timeout`. Nothing is allocated
/// by what a client sends beyond those bounds.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/error.hpp"
#include "core/cluster/peer_address.hpp"

namespace conveyor {

class metrics_endpoint {
 public:
  using renderer = std::function<std::string()>;
  struct route {
    std::string path;  ///< exact, e.g. "/metrics"
    std::string content_type;
    renderer render;
  };
  struct limits {
    int workers = 2;          ///< >= 1
    std::size_t queued = 16;  ///< >= 1
    std::chrono::seconds timeout{5};
  };

  /// Serves `routes` at `at` (port 0: one the system picks, see port()) until destroyed. The
  /// renderers are called on the endpoint's threads, at most `workers` at once.
  /// errc::invalid_config naming the address when it cannot listen there.
  static expected<std::unique_ptr<metrics_endpoint>> start(const peer_address& at,
                                                           std::vector<route> routes, limits l);
  static expected<std::unique_ptr<metrics_endpoint>> start(const peer_address& at,
                                                           std::vector<route> routes) {
    return start(at, std::move(routes), limits{});
  }

  /// Stops listening and waits for the requests being served, at most twice the time-out;
  /// a thread still serving then is let go (it holds what it uses).
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;

  std::uint16_t port() const noexcept { return port_; }

  struct shared;  ///< the server and its queue, held by each of its threads

 private:
  metrics_endpoint(std::shared_ptr<shared> s, std::uint16_t port, limits l);

  std::shared_ptr<shared> shared_;
  std::uint16_t port_ = 0;
  limits limits_;
  std::vector<std::thread> threads_;
};

}  // namespace conveyor

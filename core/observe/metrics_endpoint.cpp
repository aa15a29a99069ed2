#include "core/observe/metrics_endpoint.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <regex>

namespace conveyor {

struct metrics_endpoint::shared {
  httplib::Server server;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> jobs;  ///< accepted connections; guarded by mutex
  std::size_t queued = 1;
  bool stopping = false;  ///< guarded by mutex
  int running = 0;        ///< the endpoint's threads not yet done; guarded by mutex

  void finished() {
    std::lock_guard<std::mutex> lock(mutex);
    --running;
    changed.notify_all();
  }
};

namespace {

// cpp-httplib's queue of accepted connections, bounded: the listener waits while it is full.
// cpp-httplib owns (and deletes) this object; the jobs live in the endpoint's shared state.
class bounded_tasks : public httplib::TaskQueue {
 public:
  explicit bounded_tasks(std::shared_ptr<metrics_endpoint::shared> s) : s_(std::move(s)) {}
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(s_->mutex);
    s_->changed.wait(lock, [this] { return s_->jobs.size() < s_->queued || s_->stopping; });
    s_->jobs.push_back(std::move(fn));
    s_->changed.notify_all();
  }
  void shutdown() override {}  // the endpoint stops its workers itself

 private:
  std::shared_ptr<metrics_endpoint::shared> s_;
};

// A worker: serves accepted connections until the endpoint stops and none is left.
void serve(const std::shared_ptr<metrics_endpoint::shared>& s) {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->changed.wait(lock, [&s] { return !s->jobs.empty() || s->stopping; });
      if (s->jobs.empty()) {
        break;
      }
      job = std::move(s->jobs.front());
      s->jobs.pop_front();
      s->changed.notify_all();
    }
    job();  // serves and closes the connection
  }
  s->finished();
}

void configure(httplib::Server& server, const metrics_endpoint::limits& l,
               std::vector<metrics_endpoint::route> routes) {
  const auto timeout = static_cast<time_t>(l.timeout.count());
  server.set_read_timeout(timeout);
  server.set_write_timeout(timeout);
  server.set_keep_alive_max_count(1);
  server.set_keep_alive_timeout(timeout);  // how long a connection may wait for its request
  // cpp-httplib's default also sets SO_REUSEPORT, with which a second listener (another
  // process) could bind the same port and take scrapes: only SO_REUSEADDR here.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_payload_max_length(1024);
  for (auto& r : routes) {
    // A path is a regular expression to cpp-httplib: quoted, only the path itself matches.
    auto pattern = std::regex_replace(r.path, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
    server.Get(pattern, [r = std::move(r)](const httplib::Request&, httplib::Response& res) {
      res.set_content(r.render(), r.content_type.c_str());
    });
  }
}

}  // namespace

expected<std::unique_ptr<metrics_endpoint>> metrics_endpoint::start(const peer_address& at,
                                                                    std::vector<route> routes,
                                                                    limits l) {
  auto s = std::make_shared<shared>();
  s->queued = std::max<std::size_t>(l.queued, 1);
  l.workers = std::max(l.workers, 1);
  configure(s->server, l, std::move(routes));
  // Weak: the server is part of the shared state, and a strong pointer in its own member would
  // keep it alive forever (the listener, which holds the state, is the only one to call this).
  s->server.new_task_queue = [weak = std::weak_ptr<shared>(s)] {
    return new bounded_tasks(weak.lock());
  };
  const int port = at.port == 0 ? s->server.bind_to_any_port(at.host)
                                : (s->server.bind_to_port(at.host, at.port) ? at.port : -1);
  if (port <= 0) {
    return error{errc::invalid_config,
                 "monitor.metrics: cannot listen at " + at.text() +
                     " (the address is in use, not this machine's, or not allowed)"};
  }
  return std::unique_ptr<metrics_endpoint>(
      new metrics_endpoint(std::move(s), static_cast<std::uint16_t>(port), l));
}

metrics_endpoint::metrics_endpoint(std::shared_ptr<shared> s, std::uint16_t port, limits l)
    : shared_(std::move(s)), port_(port), limits_(l) {
  shared_->running = 1 + limits_.workers;
  threads_.emplace_back([s = shared_] {
    s->server.listen_after_bind();
    s->finished();
  });
  for (int i = 0; i < limits_.workers; ++i) {
    threads_.emplace_back([s = shared_] { serve(s); });
  }
  // cpp-httplib's stop() does nothing before its listener runs: be sure it does before anyone
  // may stop it (it gives no signal to wait on; this takes a thread's start, within time-out).
  const auto deadline = std::chrono::steady_clock::now() + limits_.timeout;
  while (!shared_->server.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

metrics_endpoint::~metrics_endpoint() {
  shared_->server.stop();
  std::unique_lock<std::mutex> lock(shared_->mutex);
  shared_->stopping = true;
  shared_->changed.notify_all();
  shared_->changed.wait_for(lock, 2 * limits_.timeout, [this] { return shared_->running == 0; });
  lock.unlock();
  for (auto& t : threads_) {
    t.detach();  // done, or bounded by the time-outs and holding the shared state
  }
}

}  // namespace conveyor

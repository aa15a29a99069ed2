#pragma once
/// A loopback HTTP/1.1 proxy in front of an S3-compatible server that makes it behave as a
/// distant or failing one: latency added to every request, a bandwidth cap per connection, and
/// faults drawn per request from a seed: a share answered "503 SlowDown" by the proxy itself, a
/// share whose answer is cut mid-body and the connection reset (RST), a share held past a
/// client's deadline, or every answer garbage (bytes that are not HTTP). For the fault tests
/// (tests/test_s3_faults.cpp) and the object-storage benchmark (bench/s3.sh, through
/// tests/tools/s3_proxy.cpp). One thread per connection; thread-safe counts.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace conveyor::testing {

struct proxy_faults {
  int latency_ms = 0;              ///< added before each request is forwarded
  double mbit_per_connection = 0;  ///< the answers' bytes per connection, at most; 0: no cap
  double throttle_share = 0;       ///< requests answered 503 SlowDown without forwarding
  double reset_share = 0;          ///< answers cut after half their body, then a reset
  double slow_share = 0;           ///< requests held `slow_ms` before being forwarded
  int slow_ms = 0;
  bool garbage = false;  ///< every request answered with bytes that are not HTTP
  /// Requests whose target contains `fail_path`, after the first `fail_after` of them, all
  /// answered 503 SlowDown: an object that stays unreadable ("" for none).
  std::string fail_path;
  int fail_after = 0;
  std::uint64_t seed = 1;
};

class fault_proxy {
 public:
  /// Listens on 127.0.0.1 (an ephemeral port) and forwards to 127.0.0.1:`upstream`.
  fault_proxy(std::uint16_t upstream, proxy_faults faults);
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  std::uint16_t port() const noexcept { return port_; }

  struct tally {
    std::uint64_t requests = 0;
    std::uint64_t throttled = 0;
    std::uint64_t resets = 0;
    std::uint64_t slowed = 0;
  };
  tally counts() const;

  struct state;  ///< shared with the connections' threads

 private:
  void accept_loop();

  std::shared_ptr<state> state_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  std::thread acceptor_;
};

}  // namespace conveyor::testing

#pragma once
/// A loopback HTTP/1.1 proxy in front of an S3-compatible server that makes it behave as a
/// distant or failing one: latency added to every request, a bandwidth cap per connection, and
/// faults drawn per request from a seed: a share answered "503 SlowDown" by the proxy itself, a
/// share whose answer is cut mid-body and the connection reset (RST), a share held past a
/// client's deadline, every answer garbage (bytes that are not HTTP), or answers rewritten by
/// the test (a store that lies: a listing that never ends, a range that is not the one asked).
/// For the fault tests (tests/test_s3_faults.cpp) and the object-storage benchmark (bench/s3.sh,
/// through tests/tools/s3_proxy.cpp). One thread per connection; thread-safe counts.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace conveyor::testing {

/// A server's answer, whole, as a rewrite sees it: the status line and headers (each line
/// ending in CRLF, the blank line included) and the body (a chunked one joined, its head then
/// saying Content-Length).
struct proxy_answer {
  std::string head;
  std::string body;
  /// The proxy closes the connection (FIN) once the answer is sent, whatever its head announced.
  bool close_after = false;
};

/// Changes the answer to `request` (its request line and headers) before it is sent on; the
/// head goes out as the rewrite leaves it (set_body keeps Content-Length right). Called on the
/// connections' threads, one answer at a time per connection.
using answer_rewrite = std::function<void(const std::string& request, proxy_answer& answer)>;

/// The value of header `name` (any case) in a head, or nullopt.
std::optional<std::string> header_value(const std::string& head, const std::string& name);
/// Sets header `name` of `head` to `value` (added when missing), or removes it (nullopt).
void set_header(std::string& head, const std::string& name,
                const std::optional<std::string>& value);
/// Replaces the answer's body, and its Content-Length with the new size.
void set_body(proxy_answer& answer, std::string body);
/// Whether `request` (its head) asks for a ListObjectsV2 page.
bool is_listing(const std::string& request);
/// A rewrite that answers every listing with one page of `objects`, truncated, whose
/// continuation token is always "again": a listing that never ends.
answer_rewrite repeating_listing(std::vector<std::pair<std::string, std::uint64_t>> objects);
/// Makes the answer a 200 whose body is a ListObjectsV2 page as S3 writes it: `objects` (key,
/// size), truncated when `next_token` is not "" (then the token to ask the next page with).
void answer_listing(proxy_answer& answer,
                    const std::vector<std::pair<std::string, std::uint64_t>>& objects,
                    const std::string& next_token);

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
  /// Every answer read whole and passed through it before it is sent on; empty: none.
  answer_rewrite rewrite;
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

#include "support/fault_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>

namespace conveyor::testing {

struct fault_proxy::state {
  std::uint16_t upstream = 0;
  proxy_faults faults;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> throttled{0};
  std::atomic<std::uint64_t> resets{0};
  std::atomic<std::uint64_t> slowed{0};
  std::atomic<int> fail_path_seen{0};
  std::mutex mutex;
  std::mt19937_64 draws;
  std::vector<std::thread> connections;

  double draw() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::uniform_real_distribution<double>(0.0, 1.0)(draws);
  }
};

namespace {

constexpr std::size_t max_head = 64 << 10;

// Reads from `fd` into `buf` until `buf` holds a head ending in CRLF CRLF. False at EOF, error,
// a head past max_head, or the proxy stopping (polled every 100 ms).
bool read_head(int fd, std::string& buf, std::size_t& head_end, const std::atomic<bool>& stop) {
  for (;;) {
    auto at = buf.find("\r\n\r\n");
    if (at != std::string::npos) {
      head_end = at + 4;
      return true;
    }
    if (buf.size() > max_head || stop) {
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) == 0) {
      continue;
    }
    char chunk[16384];
    auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      return false;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

// Reads until `buf` holds at least `size` bytes.
bool read_at_least(int fd, std::string& buf, std::size_t size) {
  while (buf.size() < size) {
    char chunk[65536];
    auto n = ::recv(fd, chunk, std::min(sizeof chunk, size - buf.size()), 0);
    if (n <= 0) {
      return false;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    auto n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string lower(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

// Where the line of header `name` starts in `head` (after its CRLF), or npos.
std::size_t header_line(const std::string& head, const std::string& name) {
  auto at = lower(head).find("\r\n" + lower(name) + ":");
  return at == std::string::npos ? at : at + 2;
}

// The next chunk of a chunked body, read into `pending` from `fd` whole: its data's size (0:
// the last chunk) and how many bytes of `pending` it spans (size line, data, CRLF). nullopt
// when the upstream fails.
std::optional<std::pair<std::size_t, std::size_t>> next_chunk(int fd, std::string& pending) {
  auto eol = pending.find("\r\n");
  while (eol == std::string::npos) {
    if (!read_at_least(fd, pending, pending.size() + 1)) {
      return std::nullopt;
    }
    eol = pending.find("\r\n");
  }
  const auto size = std::stoull(pending.substr(0, eol), nullptr, 16);
  const auto whole = eol + 2 + size + 2;
  if (!read_at_least(fd, pending, whole)) {
    return std::nullopt;
  }
  return std::pair{static_cast<std::size_t>(size), static_cast<std::size_t>(whole)};
}

int connect_upstream(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void reset(int fd) {
  linger l{1, 0};  // close with RST
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// Sends `data` to `fd` at `bytes_per_s` at most (0: at once), from the connection's clock.
class paced_sender {
 public:
  explicit paced_sender(double mbit) : bytes_per_s_(mbit * 1e6 / 8) {}
  bool send(int fd, const char* data, std::size_t size) {
    constexpr std::size_t piece = 64 << 10;
    for (std::size_t at = 0; at < size; at += piece) {
      auto n = std::min(piece, size - at);
      if (bytes_per_s_ > 0) {
        if (sent_ == 0) {
          start_ = std::chrono::steady_clock::now();
        }
        auto due = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(sent_ / bytes_per_s_));
        std::this_thread::sleep_until(due);
      }
      if (!send_all(fd, data + at, n)) {
        return false;
      }
      sent_ += static_cast<double>(n);
    }
    return true;
  }
  void restart() { sent_ = 0; }

 private:
  double bytes_per_s_;
  double sent_ = 0;
  std::chrono::steady_clock::time_point start_;
};

const char* slow_down =
    "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: 118\r\n\r\n"
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Reduce your "
    "request rate.</Message></Error>\n";

// One client connection: requests in, answers out, faults drawn per request.
class connection {
 public:
  connection(int client, fault_proxy::state& s)
      : client_(client), s_(s), pace_(s.faults.mbit_per_connection) {}
  ~connection() {
    if (client_ >= 0) {
      ::close(client_);
    }
    if (upstream_ >= 0) {
      ::close(upstream_);
    }
  }

  void run() {
    while (!s_.stopping && serve_one()) {
    }
  }

 private:
  bool serve_one() {
    std::size_t head_end = 0;
    if (!read_head(client_, in_, head_end, s_.stopping)) {
      return false;
    }
    const auto head = in_.substr(0, head_end);
    const auto body_size = std::stoull(header_value(head, "content-length").value_or("0"));
    if (!read_at_least(client_, in_, head_end + body_size)) {
      return false;
    }
    std::string request = in_.substr(0, head_end + body_size);
    in_.erase(0, head_end + body_size);
    s_.requests++;
    const auto& f = s_.faults;
    if (f.garbage) {
      const char* junk = "SSH-2.0-OpenSSH_9.2\r\nnot an answer\r\n\r\n";
      send_all(client_, junk, std::strlen(junk));
      return false;
    }
    const auto target_end = head.find(" HTTP/");
    const bool doomed = !f.fail_path.empty() &&
                        head.substr(0, target_end).find(f.fail_path) != std::string::npos &&
                        s_.fail_path_seen++ >= f.fail_after;
    if (doomed || s_.draw() < f.throttle_share) {
      s_.throttled++;
      return send_all(client_, slow_down, std::strlen(slow_down));
    }
    const bool cut = s_.draw() < f.reset_share;
    if (f.latency_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(f.latency_ms));
    }
    if (s_.draw() < f.slow_share) {
      s_.slowed++;
      std::this_thread::sleep_for(std::chrono::milliseconds(f.slow_ms));
    }
    return forward(request, head.rfind("HEAD ", 0) == 0, cut);
  }

  bool forward(const std::string& request, bool head_only, bool cut) {
    if (upstream_ < 0 && (upstream_ = connect_upstream(s_.upstream)) < 0) {
      return false;
    }
    if (!send_all(upstream_, request.data(), request.size())) {
      return false;
    }
    std::string answer;
    std::size_t head_end = 0;
    if (!read_head(upstream_, answer, head_end, s_.stopping)) {
      return false;
    }
    const auto head = answer.substr(0, head_end);
    const auto length = header_value(head, "content-length");
    const bool chunked = lower(header_value(head, "transfer-encoding").value_or("")) == "chunked";
    std::size_t body = head_only || !length ? 0 : std::stoull(*length);
    answer.erase(0, head_end);
    if (s_.faults.rewrite) {
      return rewritten(request, head, chunked, body, answer);
    }
    pace_.restart();
    if (!pace_.send(client_, head.data(), head.size())) {
      return false;
    }
    if (chunked) {
      return relay_chunked(answer);
    }
    if (cut && body > 1) {
      s_.resets++;
      read_at_least(upstream_, answer, body / 2);
      pace_.send(client_, answer.data(), body / 2);
      reset(client_);
      client_ = -1;
      ::close(upstream_);
      upstream_ = -1;
      return false;
    }
    while (body > 0) {
      if (answer.empty() &&
          !read_at_least(upstream_, answer, std::min<std::size_t>(body, 1 << 20))) {
        return false;
      }
      auto n = std::min(body, answer.size());
      if (!pace_.send(client_, answer.data(), n)) {
        return false;
      }
      answer.erase(0, n);
      body -= n;
    }
    return lower(header_value(head, "connection").value_or("")) != "close";
  }

  // A chunked body relayed as it is, up to its last chunk.
  bool relay_chunked(std::string& pending) {
    for (;;) {
      auto chunk = next_chunk(upstream_, pending);
      if (!chunk || !pace_.send(client_, pending.data(), chunk->second)) {
        return false;
      }
      pending.erase(0, chunk->second);
      if (chunk->first == 0) {
        return true;
      }
    }
  }

  // The answer read whole (`pending` holds what came after its head), passed through the
  // test's rewrite, and sent as the rewrite left it.
  bool rewritten(const std::string& request, const std::string& head, bool chunked,
                 std::size_t body, std::string& pending) {
    proxy_answer a{head, {}, false};
    if (chunked) {
      for (;;) {
        auto chunk = next_chunk(upstream_, pending);
        if (!chunk) {
          return false;
        }
        a.body.append(pending, chunk->second - chunk->first - 2, chunk->first);
        pending.erase(0, chunk->second);
        if (chunk->first == 0) {
          break;
        }
      }
      set_header(a.head, "transfer-encoding", std::nullopt);
      set_body(a, std::move(a.body));
    } else if (read_at_least(upstream_, pending, body)) {
      a.body = pending.substr(0, body);
    } else {
      return false;
    }
    s_.faults.rewrite(request, a);
    pace_.restart();
    const bool sent = pace_.send(client_, a.head.data(), a.head.size()) &&
                      pace_.send(client_, a.body.data(), a.body.size());
    if (!sent || a.close_after) {
      ::shutdown(client_, SHUT_RDWR);
      return false;
    }
    return lower(header_value(a.head, "connection").value_or("")) != "close";
  }

  int client_;
  int upstream_ = -1;
  fault_proxy::state& s_;
  paced_sender pace_;
  std::string in_;
};

}  // namespace

std::optional<std::string> header_value(const std::string& head, const std::string& name) {
  const auto line = header_line(head, name);
  if (line == std::string::npos) {
    return std::nullopt;
  }
  const auto start = line + name.size() + 1;
  auto value = head.substr(start, head.find("\r\n", start) - start);
  value.erase(0, value.find_first_not_of(' '));
  return value;
}

void set_header(std::string& head, const std::string& name,
                const std::optional<std::string>& value) {
  if (const auto line = header_line(head, name); line != std::string::npos) {
    head.erase(line, head.find("\r\n", line) + 2 - line);
  }
  if (value) {
    head.insert(head.size() - 2, name + ": " + *value + "\r\n");  // before the blank line
  }
}

void set_body(proxy_answer& answer, std::string body) {
  answer.body = std::move(body);
  set_header(answer.head, "Content-Length", std::to_string(answer.body.size()));
}

bool is_listing(const std::string& request) {
  return request.substr(0, request.find("\r\n")).find("list-type=2") != std::string::npos;
}

answer_rewrite repeating_listing(std::vector<std::pair<std::string, std::uint64_t>> objects) {
  return [objects = std::move(objects)](const std::string& request, proxy_answer& a) {
    if (is_listing(request)) {
      answer_listing(a, objects, "again");
    }
  };
}

void answer_listing(proxy_answer& answer,
                    const std::vector<std::pair<std::string, std::uint64_t>>& objects,
                    const std::string& next_token) {
  std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bucket</Name>";
  for (const auto& [key, size] : objects) {
    xml += "<Contents><Key>" + key + "</Key><Size>" + std::to_string(size) + "</Size></Contents>";
  }
  xml += "<KeyCount>" + std::to_string(objects.size()) + "</KeyCount><IsTruncated>" +
         (next_token.empty() ? "false" : "true") + "</IsTruncated>";
  if (!next_token.empty()) {
    xml += "<NextContinuationToken>" + next_token + "</NextContinuationToken>";
  }
  answer.head = "HTTP/1.1 200 OK" + answer.head.substr(answer.head.find("\r\n"));
  set_header(answer.head, "Content-Type", "application/xml");
  set_body(answer, xml + "</ListBucketResult>");
}

fault_proxy::fault_proxy(std::uint16_t upstream, proxy_faults faults)
    : state_(std::make_shared<state>()) {
  state_->upstream = upstream;
  state_->faults = faults;
  state_->draws.seed(faults.seed);
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(listener_, 128);
  socklen_t size = sizeof addr;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &size);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

fault_proxy::~fault_proxy() {
  state_->stopping = true;
  ::shutdown(listener_, SHUT_RDWR);
  ::close(listener_);
  acceptor_.join();
  for (auto& t : state_->connections) {
    t.join();
  }
}

void fault_proxy::accept_loop() {
  for (;;) {
    pollfd p{listener_, POLLIN, 0};
    if (poll(&p, 1, 100) == 0) {
      if (state_->stopping) {
        return;
      }
      continue;
    }
    int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0 || state_->stopping) {
      if (client >= 0) {
        ::close(client);
      }
      return;
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto s = state_;
    std::lock_guard<std::mutex> lock(s->mutex);
    s->connections.emplace_back([client, s] { connection(client, *s).run(); });
  }
}

fault_proxy::tally fault_proxy::counts() const {
  return {state_->requests.load(), state_->throttled.load(), state_->resets.load(),
          state_->slowed.load()};
}

}  // namespace conveyor::testing

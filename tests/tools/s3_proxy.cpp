// s3_proxy: the fault proxy of the tests (tests/support/fault_proxy.hpp) as a process, for
// bench/s3.sh: forwards 127.0.0.1:<port it prints> to 127.0.0.1:UPSTREAM with latency and a
// bandwidth cap per connection (and faults, if asked), until SIGTERM or SIGINT. Built by
// bench/CMakeLists.txt.
//   s3_proxy UPSTREAM [--latency-ms N] [--mbit-per-connection X] [--throttle-share S]
//            [--reset-share S]
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/fault_proxy.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: s3_proxy UPSTREAM_PORT [--latency-ms N] [--mbit-per-connection X] "
                 "[--throttle-share S] [--reset-share S]\n");
    return 2;
  }
  conveyor::testing::proxy_faults faults;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const double value = std::atof(argv[i + 1]);
    if (key == "--latency-ms") {
      faults.latency_ms = static_cast<int>(value);
    } else if (key == "--mbit-per-connection") {
      faults.mbit_per_connection = value;
    } else if (key == "--throttle-share") {
      faults.throttle_share = value;
    } else if (key == "--reset-share") {
      faults.reset_share = value;
    } else {
      std::fprintf(stderr, "s3_proxy: unknown option %s\n", key.c_str());
      return 2;
    }
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  conveyor::testing::fault_proxy proxy(static_cast<std::uint16_t>(std::atoi(argv[1])), faults);
  std::printf("%u\n", proxy.port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  auto c = proxy.counts();
  std::fprintf(stderr, "s3_proxy: %llu requests, %llu throttled, %llu reset\n",
               static_cast<unsigned long long>(c.requests),
               static_cast<unsigned long long>(c.throttled),
               static_cast<unsigned long long>(c.resets));
  return 0;
}

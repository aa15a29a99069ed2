#include "apps/conveyor-analyze/measure_fetch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace conveyor {
namespace {

struct pass {
  double seconds = 0;
  std::uint64_t bytes = 0;
  std::uint64_t failed = 0;
};

// One pass over `ids` on `readers` threads, each taking the next position in order.
pass read_all(const sample_source& source, const std::vector<std::uint64_t>& ids, int readers,
              const progress_fn& progress, std::uint64_t done_before) {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> failed{0};
  const auto report = serialized(progress);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&] {
      for (std::uint64_t i = next++; i < ids.size(); i = next++) {
        if (auto got = source.read(ids[i])) {
          bytes += got->payload.size();
        } else {
          failed += 1;
        }
        if (report) {
          report(done_before + i + 1);
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          bytes.load(), failed.load()};
}

}  // namespace

std::uint64_t drop_from_page_cache(const std::vector<std::filesystem::path>& files) {
  std::uint64_t dropped = 0;
  for (const auto& f : files) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    ::fdatasync(fd);  // dirty pages cannot be dropped
    dropped += ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? 1 : 0;
    ::close(fd);
  }
  return dropped;
}

fetch_measurement measure_fetch(const sample_source& source, const std::vector<std::uint64_t>& ids,
                                int readers, const progress_fn& progress) {
  fetch_measurement m;
  const auto files = source.files();
  m.files = files.size();
  m.files_dropped = drop_from_page_cache(files);
  m.samples = ids.size();
  auto cold = read_all(source, ids, readers, progress, 0);
  auto warm = read_all(source, ids, readers, progress, ids.size());
  m.cold_s = cold.seconds;
  m.warm_s = warm.seconds;
  m.bytes = cold.bytes;
  m.failed = cold.failed;
  return m;
}

}  // namespace conveyor

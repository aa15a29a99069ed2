// libFuzzer target: arbitrary bytes as a Python worker's reply (core/python/worker_protocol.hpp),
// with the descriptor a worker would pass: the first byte says whether one comes with it (bit
// 0) and whether it is a pipe's read end instead of the worker's memfd (bit 1), the next two
// the memfd's size. Decoding must return an error or a sample whose every field lies inside
// its region, matches its shape and reads whole from the memfd; never crash, read out of
// bounds or leak a descriptor.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/python/worker_protocol.hpp"

namespace {

conveyor::unique_fd memfd_of(std::size_t size) {
  conveyor::unique_fd fd(::memfd_create("fuzz-region", MFD_CLOEXEC));
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    std::abort();
  }
  return fd;
}

conveyor::unique_fd pipe_read_end() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    std::abort();
  }
  ::close(ends[1]);
  return conveyor::unique_fd(ends[0]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  conveyor::received_message m;
  if ((data[0] & 1U) != 0) {
    const std::size_t region = data[1] | (std::size_t{data[2]} << 8U);
    m.fds.push_back((data[0] & 2U) != 0 ? pipe_read_end() : memfd_of(region));
  }
  m.bytes.assign(data + 3, data + size);
  auto reply = conveyor::decode_reply(std::move(m));
  if (reply && reply->kind == conveyor::reply_kind::done) {
    const auto& s = reply->sample;
    for (const auto& f : s.fields) {
      std::vector<std::uint8_t> out(f.bytes);
      if (f.bytes > 0 && (!s.file || !s.copy(f, out.data()))) {
        std::abort();  // within the file's size: every byte reads
      }
    }
  }
  return 0;
}

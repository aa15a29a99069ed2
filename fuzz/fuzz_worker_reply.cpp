// libFuzzer target: arbitrary bytes as a Python worker's reply (core/python/worker_protocol.hpp),
// with the region a worker would pass: the first byte says whether a memfd comes with it (bit
// 0), whether it is sealed against writes (bit 1) and whether the reply is decoded as a Python
// step's answer, its bytes in the worker's own unsealed memfd (bit 2), the next two its size.
// Decoding must return an error or a sample whose every field lies inside its region and matches
// its shape (and, for a step's answer, reads whole); never crash, read out of bounds or leak a
// descriptor.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/python/worker_protocol.hpp"

namespace {

conveyor::unique_fd region_of(std::size_t size, bool sealed) {
  conveyor::unique_fd fd(::memfd_create("fuzz-region", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    std::abort();
  }
  const int seals = F_SEAL_SHRINK | F_SEAL_GROW | (sealed ? F_SEAL_WRITE : 0);
  if (::fcntl(fd.get(), F_ADD_SEALS, seals) != 0) {
    std::abort();
  }
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) {
    return 0;
  }
  conveyor::received_message m;
  if ((data[0] & 1U) != 0) {
    const std::size_t region = data[1] | (std::size_t{data[2]} << 8U);
    m.fds.push_back(region_of(region, (data[0] & 2U) != 0));
  }
  m.bytes.assign(data + 3, data + size);
  // Bit 2: the answer of a Python step, its bytes in the worker's own (unsealed) memfd.
  const bool reused = (data[0] & 4U) != 0;
  auto reply = conveyor::decode_reply(
      std::move(m), reused ? conveyor::reply_region::reused : conveyor::reply_region::sealed);
  if (reply && reply->kind == conveyor::reply_kind::done && reused) {
    const auto& s = reply->sample;
    for (const auto& f : s.fields) {
      std::vector<std::uint8_t> out(f.bytes);
      if (f.bytes > 0 && (!s.file || !s.copy(f, out.data()))) {
        std::abort();  // within the file's size: every byte reads
      }
    }
  } else if (reply && reply->kind == conveyor::reply_kind::done) {
    const auto& s = reply->sample;
    for (const auto& f : s.fields) {
      if (f.bytes > 0 && (!s.region || f.offset + f.bytes > s.region->size())) {
        std::abort();
      }
      volatile std::uint8_t last = f.bytes > 0 ? s.data(f)[f.bytes - 1] : 0;
      (void)last;
    }
  }
  return 0;
}

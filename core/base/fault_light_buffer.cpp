#include "core/base/fault_light_buffer.hpp"

#include <sys/mman.h>

#include <new>

namespace conveyor {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

// `length` bytes at a huge page's boundary, huge pages advised.
std::shared_ptr<std::uint8_t[]> mapped(std::size_t length) noexcept {
  const auto total = length + huge_page;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return nullptr;
  }
  auto at = reinterpret_cast<std::uintptr_t>(base);
  at = (at + huge_page - 1) / huge_page * huge_page;
  (void)madvise(reinterpret_cast<void*>(at), length, MADV_HUGEPAGE);
  try {
    return std::shared_ptr<std::uint8_t[]>(reinterpret_cast<std::uint8_t*>(at),
                                           [base, total](std::uint8_t*) { munmap(base, total); });
  } catch (...) {  // the control block could not be had
    munmap(base, total);
    return nullptr;
  }
}

}  // namespace

std::shared_ptr<std::uint8_t[]> fault_light_buffer(std::size_t size) noexcept {
  if (size >= huge_page) {
    return mapped(size);
  }
  try {
    return std::shared_ptr<std::uint8_t[]>(new (std::nothrow) std::uint8_t[size]);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace conveyor

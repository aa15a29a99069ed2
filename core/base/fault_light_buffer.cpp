#include "core/base/fault_light_buffer.hpp"

#include <sys/mman.h>

#include <new>

namespace conveyor {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;
constexpr std::size_t populate_from = std::size_t{64} << 10;

std::shared_ptr<std::uint8_t[]> mapped(std::size_t length, int flags, std::size_t align) noexcept {
  void* base = mmap(nullptr, length + align, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (base == MAP_FAILED) {
    return nullptr;
  }
  auto at = reinterpret_cast<std::uintptr_t>(base);
  if (align > 0) {
    at = (at + align - 1) / align * align;
    (void)madvise(reinterpret_cast<void*>(at), length, MADV_HUGEPAGE);
  }
  const auto total = length + align;
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
    return mapped(size, 0, huge_page);
  }
  if (size >= populate_from) {
    return mapped(size, MAP_POPULATE, 0);
  }
  try {
    return std::shared_ptr<std::uint8_t[]>(new (std::nothrow) std::uint8_t[size]);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace conveyor

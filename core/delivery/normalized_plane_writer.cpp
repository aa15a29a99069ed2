#include "core/delivery/normalized_plane_writer.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace conveyor {
namespace {

#if defined(__x86_64__) || defined(__i386__)
bool has_avx2() noexcept {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

// Scalar up to a 32-byte boundary of `out`, then 8 values per gather and streaming store.
__attribute__((target("avx2"))) void write_avx2(const float* t, const std::uint8_t* in,
                                                std::size_t count, float* out) noexcept {
  std::size_t i = 0;
  for (; i < count && (reinterpret_cast<std::uintptr_t>(out + i) & 31U) != 0; ++i) {
    out[i] = t[in[i]];
  }
  for (; i + 8 <= count; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i));
    const __m256i index = _mm256_cvtepu8_epi32(bytes);
    _mm256_stream_ps(out + i, _mm256_i32gather_ps(t, index, 4));
  }
  for (; i < count; ++i) {
    out[i] = t[in[i]];
  }
}
#endif

}  // namespace

void write_normalized_plane(const normalize_table& table, int c, const std::uint8_t* in,
                            std::size_t count, float* out) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (has_avx2()) {
    write_avx2(table.channel(c), in, count, out);
    return;
  }
#endif
  table.plane(c, in, count, out);
}

void store_fence() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (has_avx2()) {
    _mm_sfence();
  }
#endif
}

}  // namespace conveyor

// sparsenm prune — Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
// as 1, 2, 3", SC'11), written from the published algorithm and constants. Counter-based: the
// output depends only on (counter, key), so CPU and GPU code that use the same counters draw
// the same numbers. Checked against Random123's known-answer vectors in tests/test_prune.cpp.
//
// One round: (hi0, lo0) = mulhilo(0xD2511F53, c0); (hi1, lo1) = mulhilo(0xCD9E8D57, c2);
//            c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0).
// Ten rounds; between rounds the key is bumped by the Weyl constants (0x9E3779B9, 0xBB67AE85).
// Header-only and usable from CUDA (host + device) so the GPU MVUE can include it unchanged.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SPARSENM_PHILOX_FN __host__ __device__ __forceinline__
#else
#define SPARSENM_PHILOX_FN inline
#endif

namespace sparsenm::prune_detail {

SPARSENM_PHILOX_FN void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2],
                                      std::uint32_t out[4]) noexcept {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  std::uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const std::uint64_t p0 = std::uint64_t(kM0) * c0;
    const std::uint64_t p1 = std::uint64_t(kM1) * c2;
    const std::uint32_t hi0 = std::uint32_t(p0 >> 32), lo0 = std::uint32_t(p0);
    const std::uint32_t hi1 = std::uint32_t(p1 >> 32), lo1 = std::uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/// The MVUE uniform of group `group` (column / 4) of row `row` under `seed`: one Philox-4x32-10
/// call serves 4 consecutive groups. Key = (seed low, seed high), counter = (q low, q high, row
/// low, row high) with q = group / 4; output word group % 4, its top 23 bits scaled by 2^-23: a
/// float in [0, 1) with 23 bits per decision (exactly representable: u * c rounds once).
SPARSENM_PHILOX_FN float mvue_uniform(std::uint64_t seed, std::uint64_t row, std::uint64_t group) noexcept {
  const std::uint64_t q = group >> 2;
  const std::uint32_t key[2] = {std::uint32_t(seed), std::uint32_t(seed >> 32)};
  const std::uint32_t ctr[4] = {std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(row), std::uint32_t(row >> 32)};
  std::uint32_t out[4];
  philox4x32_10(ctr, key, out);
  return float(out[group & 3u] >> 9) * (1.0f / 8388608.0f);
}

}  // namespace sparsenm::prune_detail

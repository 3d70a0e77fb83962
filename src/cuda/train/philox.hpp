// sparsenm — Philox-4x32-10 counter-based RNG (Salmon, Moraes, Dror, Shaw, SC'11), host and
// device. Used by the MVUE 2:4 estimator: a group's random number depends only on (seed, group
// position), so CPU and GPU results are identical and independent of the launch configuration.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SPARSENM_HD __host__ __device__ __forceinline__
#else
#define SPARSENM_HD inline
#endif
// device pass only: the host compiler of a .cu file would warn about an unknown pragma
#if defined(__CUDA_ARCH__)
#define SPARSENM_UNROLL _Pragma("unroll")
#else
#define SPARSENM_UNROLL
#endif

namespace sparsenm::train {

struct Philox4 {
  std::uint32_t v[4];
};

SPARSENM_HD std::uint32_t philox_mulhi(std::uint32_t a, std::uint32_t b, std::uint32_t* lo) {
  std::uint64_t p = std::uint64_t(a) * b;
  *lo = std::uint32_t(p);
  return std::uint32_t(p >> 32);
}

/// Philox-4x32-10 of counter (c0..c3) under key (k0, k1).
SPARSENM_HD Philox4 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                  std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    std::uint32_t lo0, lo1;
    std::uint32_t hi0 = philox_mulhi(M0, c0, &lo0);
    std::uint32_t hi1 = philox_mulhi(M1, c2, &lo1);
    std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += W0;
    k1 += W1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// The ten round keys of Philox-4x32-10 for key (k0, k1): (k0 + r W0, k1 + r W1), r = 0..9.
/// Kernels take them precomputed (kernel parameters: constant-bank operands, no per-thread
/// key schedule).
struct PhiloxKeys {
  std::uint32_t k0[10], k1[10];
};
inline PhiloxKeys philox_keys(std::uint64_t seed) {
  PhiloxKeys k{};
  for (int r = 0; r < 10; ++r) {
    k.k0[r] = std::uint32_t(seed) + std::uint32_t(r) * 0x9E3779B9u;
    k.k1[r] = std::uint32_t(seed >> 32) + std::uint32_t(r) * 0xBB67AE85u;
  }
  return k;
}
/// philox4x32_10 with precomputed round keys (same output).
SPARSENM_HD Philox4 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3,
                                  const PhiloxKeys& k) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  SPARSENM_UNROLL
  for (int round = 0; round < 10; ++round) {
    std::uint32_t lo0, lo1;
    std::uint32_t hi0 = philox_mulhi(M0, c0, &lo0);
    std::uint32_t hi1 = philox_mulhi(M1, c2, &lo1);
    std::uint32_t n0 = hi1 ^ c1 ^ k.k0[round], n1 = lo1, n2 = hi0 ^ c3 ^ k.k1[round], n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
  }
  return Philox4{{c0, c1, c2, c3}};
}
/// The MVUE uniform carried by Philox output word v: its top 23 bits scaled by 2^-23, a float in
/// [0, 1) with 23 bits per decision (exactly representable, so u * c rounds once).
SPARSENM_HD float mvue_u23(std::uint32_t v) { return float(v >> 9) * (1.0f / 8388608.0f); }

/// mvue_uniform4 (below) with precomputed keys of the seed.
SPARSENM_HD void mvue_uniform4(const PhiloxKeys& keys, std::uint64_t row, std::uint64_t q, float (&u)[4]) {
  const Philox4 r = philox4x32_10(std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(row), std::uint32_t(row >> 32), keys);
  SPARSENM_UNROLL
  for (int j = 0; j < 4; ++j) u[j] = mvue_u23(r.v[j]);
}

/// The 4 MVUE uniforms of groups 4q .. 4q + 3 (token / 4) of row `row` (feature) under seed, as
/// the CPU reference (src/prune/philox.hpp): one call, counter = (q lo32, q hi32, row lo32,
/// row hi32), key = (seed lo32, seed hi32); group 4q + j gets u = (v[j] >> 9) * 2^-23 in [0, 1).
SPARSENM_HD void mvue_uniform4(std::uint64_t seed, std::uint64_t row, std::uint64_t q, float (&u)[4]) {
  const Philox4 r = philox4x32_10(std::uint32_t(q), std::uint32_t(q >> 32), std::uint32_t(row), std::uint32_t(row >> 32),
                                  std::uint32_t(seed), std::uint32_t(seed >> 32));
  SPARSENM_UNROLL
  for (int j = 0; j < 4; ++j) u[j] = mvue_u23(r.v[j]);
}

/// The MVUE uniform of one group (token / 4) of row `row`: mvue_uniform4(group / 4)[group % 4].
SPARSENM_HD float mvue_uniform(std::uint64_t seed, std::uint64_t row, std::uint64_t group) {
  float u[4];
  mvue_uniform4(seed, row, group >> 2, u);
  return u[group & 3u];
}

}  // namespace sparsenm::train

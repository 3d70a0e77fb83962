// sparsenm — MVUE 2:4 of the output-activation gradient along the token dimension, fused with
// hw24 compression (seed 003 eq. 6; Chmiel et al. 2023). Estimator and RNG: train.hpp.
//
// Output: hw24 of MVUE(dZ^T), [features][tokens/2] values + 4 bits per window of 4 tokens:
// exactly the sparse operand of dW = MVUE(dZ^T) . X.
// feature_major input (dZ^T [features][tokens]): thread = 16 consecutive tokens of one feature
//   (two 16-byte loads for f16/bf16, four for f32) -> 8 values (16-byte store) + 2 index bytes;
//   a warp reads 1 KiB contiguous and writes 512 + 64 B. Grid-stride over (feature, chunk).
// token_major input (dZ [tokens][features]): CTA tile = 128 tokens x 64 features. Thread
//   (fp = tid % 32, tg = tid / 32) reads features 2fp, 2fp+1 of tokens 16tg..16tg+15 with
//   4-byte (f16) / 8-byte (f32) loads: a warp reads 128 B (256 B) contiguous per token row.
//   Results are staged in TileT (64 feature rows x 32 windows) and written as 128-byte rows.
// Bytes per element (f16): 2 read + 1 + 1/8 written = 3.125 B. Floor = bytes / copy bandwidth.
// Compute per group: the branch-free fast rule (mvue_group_pair; the full rule only for groups
// with < 2 nonzeros, non-finite values or a rounding corner) + a quarter of a Philox-4x32-10 call (one call serves
// 4 consecutive groups of a feature: the counter layout of the CPU reference).
#pragma once
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/train/mvue_rule.hpp"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/philox.hpp"
#include "cuda/train/tile_t.cuh"
#include "cuda/train/train_common.cuh"

namespace sparsenm::train::detail {

struct Mvue24Traits {
  static constexpr int kThreads = 256, kTileTokens = 128, kTileFeatures = 64;
};

/// MVUE of one group of raw elements -> (positions, stored raw values) of its hw24 window:
/// the dense rule (mvue_rule.hpp), converted to the dtype, then the condense rule on the raw
/// words, so the result equals condense(sparsenm::mvue24(dZ^T)).
template <class E, class Raw>
__device__ __forceinline__ void mvue_window(Raw x0, Raw x1, Raw x2, Raw x3, float u, Raw& vlo, Raw& vhi, unsigned& nib) {
  const float x[4] = {E::to_float(x0), E::to_float(x1), E::to_float(x2), E::to_float(x3)};
  int lo, hi;
  float flo, fhi;
  if (mvue_group_pair(x, u, lo, hi, flo, fhi)) {
    // both kept values round to nonzero words (an input value, or a sum of >= 2 nonzero
    // magnitudes (halved): >= the dtype's least subnormal), so the condense positions are (lo, hi)
    vlo = E::from_float(flo);
    vhi = E::from_float(fhi);
    nib = unsigned(lo) | (unsigned(hi) << 2);
    return;
  }
  float y[4];
  mvue_group_dense(x, u, y);
  const Raw r[4] = {E::from_float(y[0]), E::from_float(y[1]), E::from_float(y[2]), E::from_float(y[3])};
  condense_positions<Raw>(r, lo, hi);
  vlo = sel4(r[0], r[1], r[2], r[3], lo);
  vhi = sel4(r[0], r[1], r[2], r[3], hi);
  nib = unsigned(lo) | (unsigned(hi) << 2);
}

template <class T>
__global__ void __launch_bounds__(Mvue24Traits::kThreads) mvue24_feature_major_kernel(Mvue24Args args) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  constexpr int kTok = 16;  // 4 groups: one Philox call
  const std::int64_t T_ = args.tokens, N = args.features;
  const std::int64_t windows = (T_ + 3) / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  const std::int64_t chunks = (T_ + kTok - 1) / kTok, total = N * chunks;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  Raw* __restrict__ out = static_cast<Raw*>(args.values);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t f = i / chunks, t0 = (i % chunks) * kTok;
    const bool fast = args.aligned && t0 + kTok <= T_;
    Raw x[kTok];
    if (fast) load_vec<Raw, kTok>(g + f * T_ + t0, x);
    else
#pragma unroll
      for (int j = 0; j < kTok; ++j) x[j] = t0 + j < T_ ? g[f * T_ + t0 + j] : Raw(0);
    float u[4];
    mvue_uniform4(args.keys, std::uint64_t(f), std::uint64_t(t0 / kTok), u);
    Raw v[8];
    unsigned nib[4];
#pragma unroll
    for (int b = 0; b < 4; ++b)
      mvue_window<E, Raw>(x[4 * b], x[4 * b + 1], x[4 * b + 2], x[4 * b + 3], u[b], v[2 * b], v[2 * b + 1], nib[b]);
    if (fast) {
      if (out) store_vec<Raw, 8>(out + f * vcols + t0 / 2, v);
      if (args.indices)
        *reinterpret_cast<std::uint16_t*>(args.indices + f * irb + t0 / 8) =
            std::uint16_t(nib[0] | (nib[1] << 4) | (nib[2] << 8) | (nib[3] << 12));
    } else {
      const std::int64_t w0 = t0 / 4;
#pragma unroll
      for (int b = 0; b < 4; ++b)
        if (out && w0 + b < windows) {
          out[f * vcols + 2 * (w0 + b)] = v[2 * b];
          out[f * vcols + 2 * (w0 + b) + 1] = v[2 * b + 1];
        }
      if (args.indices) {
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (w0 + 2 * h < windows)
            args.indices[f * irb + t0 / 8 + h] =
                std::uint8_t(nib[2 * h] | (w0 + 2 * h + 1 < windows ? nib[2 * h + 1] << 4 : 0u));
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(Mvue24Traits::kThreads) mvue24_token_major_kernel(Mvue24Args args) {
  using E = Elem<T>;
  using Raw = typename E::Raw;
  using Traits = Mvue24Traits;
  __shared__ TileT<Raw> tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % 32, tg = tid / 32;
  const std::int64_t f_tile = blockIdx.x, t_tile = blockIdx.y;
  const std::int64_t f0 = f_tile * Traits::kTileFeatures + 2 * fp, t0 = t_tile * Traits::kTileTokens + 16 * tg;
  const bool fast = args.aligned && (f_tile + 1) * Traits::kTileFeatures <= N && (t_tile + 1) * Traits::kTileTokens <= T_;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);

  Raw x[16][2];
  if (fast) {
#pragma unroll
    for (int t = 0; t < 16; ++t) {
      if constexpr (sizeof(Raw) == 2) {
        const std::uint32_t p = __ldcs(reinterpret_cast<const unsigned int*>(g + (t0 + t) * N + f0));
        x[t][0] = Raw(p & 0xffffu);
        x[t][1] = Raw(p >> 16);
      } else {
        const uint2 p = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
        x[t][0] = p.x;
        x[t][1] = p.y;
      }
    }
  } else {
#pragma unroll
    for (int t = 0; t < 16; ++t)
#pragma unroll
      for (int k = 0; k < 2; ++k) x[t][k] = (t0 + t < T_ && f0 + k < N) ? g[(t0 + t) * N + f0 + k] : Raw(0);
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    float u[4];  // groups t0/4 .. t0/4 + 3: one Philox call (t0 is a multiple of 16)
    mvue_uniform4(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), u);
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      Raw vlo, vhi;
      unsigned nib;
      mvue_window<E, Raw>(x[4 * b][k], x[4 * b + 1][k], x[4 * b + 2][k], x[4 * b + 3][k], u[b], vlo, vhi, nib);
      tile.put(2 * fp + k, 4 * tg + b, vlo, vhi, nib);
    }
  }
  __syncthreads();
  tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * Traits::kTileFeatures,
             t_tile * (Traits::kTileTokens / 4), N, windows, fast);
}

template <class T>
void launch_mvue24_impl(const Mvue24Args& a, cudaStream_t s) {
  using Traits = Mvue24Traits;
  if (a.token_major) {
    const dim3 grid(unsigned((a.features + Traits::kTileFeatures - 1) / Traits::kTileFeatures),
                    unsigned((a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens));
    mvue24_token_major_kernel<T><<<grid, Traits::kThreads, 0, s>>>(a);
  } else {
    const std::int64_t work = a.features * ((a.tokens + 15) / 16);
    const std::int64_t blocks = std::min<std::int64_t>((work + Traits::kThreads - 1) / Traits::kThreads, 132 * 32);
    mvue24_feature_major_kernel<T><<<unsigned(blocks), Traits::kThreads, 0, s>>>(a);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("mvue24_kernel");
}

}  // namespace sparsenm::train::detail

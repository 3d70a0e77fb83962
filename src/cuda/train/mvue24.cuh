// sparsenm — MVUE 2:4 of the output-activation gradient along the token dimension, fused with
// hw24 compression (seed 003 eq. 6; Chmiel et al. 2023). Estimator and RNG: mvue_rule.hpp,
// train.hpp.
//
// Output: hw24 of MVUE(dZ^T), [features][tokens/2] values + 4 bits per window of 4 tokens:
// exactly the sparse operand of dW = MVUE(dZ^T) . X.
// feature_major input (dZ^T [features][tokens]): thread = kTok (32, or 16 where tokens % 32 != 0)
//   consecutive tokens of one feature: 16-byte loads -> kTok/2 values (16-byte stores) + kTok/8
//   index bytes. CTA = 64 x 4 threads: 64 chunks of one feature row per warp pair, 4 features.
// token_major input (dZ [tokens][features]): CTA tile = 128 tokens x 128 features. Thread
//   (fp = tid % 32, tg = tid / 32) reads features 4fp .. 4fp+3 of tokens 16tg .. 16tg+15 with
//   8-byte (16-bit types) / 16-byte (f32) loads: a warp reads 256 B (512 B) contiguous per token
//   row. Per feature the 4 windows go to shared memory as one 16-byte store (f32: two) into a
//   chunk-swizzled tile (Tile24, conflict-free), then the CTA writes 128 rows with 16-byte stores.
// Kernel variants (Mvue24Args::variant; the accepted set: variants.hpp; docs/PERF-train.md):
//   1: the kernels above (token-major f32 default, 16-bit n < 4096 or n % 64 != 0);
//   3: whole-line stores (feature-major 16-token units per lane, token-major 256 x 64 tiles): the
//      default for f32 feature-major and 16-bit token-major with n % 128 == 64 ("Session 3c");
//   6 / 7: 1 / (3 under a 64-register cap, 4 CTAs per SM) with the ALU-lean fast path
//      (mvue_window16x2_lean): f16 / bf16 feature-major with tokens % 32 != 0 ("Session 5");
//   10: the register-lean 32-token chunk kernel at 5 CTAs per SM (mvue24_feature_major_jit_kernel):
//      16-bit feature-major with tokens % 32 == 0 ("Session 6b");
//   18: the token-major kernel with short live ranges on 256 x 64 tiles
//      (mvue24_token_major_jit_kernel, Philox words of feature 0 ahead): bf16 token-major with
//      n % 128 == 0, n >= 4096 ("Session 7c");
//   23: 18 with the bf16 conversions on the FMA pipe and the token tiles along blockIdx.x: f16
//      token-major with n % 128 == 0, n >= 4096 ("Session 8 (MVUE)"); 24: 18 with the token tiles
//      along blockIdx.x (not yet measured; for f16 the same SASS as 23).
//   Variants 2, 4, 5, 8, 9, 11-17 and 19-22 measured slower than the defaults and were dropped in
//   session 9 ("Session 9: variants dropped"); their code is in the git history.
// Bytes per element (f16): 2 read + 1 + 1/8 written = 3.125 B. Floor = bytes / copy bandwidth.
// Compute per group: mvue_pick (branch-free water-filling form; the full rule only for groups
// with < 2 nonzeros, non-finite values, an overflowing sum or a rounding corner, per thread) +
// a quarter of a Philox-4x32-10 call (one call serves 4 consecutive groups of a feature: the
// counter layout of the CPU reference). 16-bit types pick the kept pair with one byte permute
// of the raw words and make its values with one packed max (|x|, c) + sign merge.
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/train/mvue_rule.hpp"
#include "cuda/train/pattern24.cuh"
#include "cuda/train/philox.hpp"
#include "cuda/train/prefetch.cuh"
#include "cuda/train/train_common.cuh"
#include "cuda/train/variants.hpp"

namespace sparsenm::train::detail {

/// SASS probe builds (scripts/mvue-sass-count): -DSPARSENM_MVUE_SASS_PROBE drops the full-rule
/// and tail paths, so cuobjdump counts exactly the instructions of the fast path.
#if defined(SPARSENM_MVUE_SASS_PROBE)
constexpr bool kMvueProbe = true;
#else
constexpr bool kMvueProbe = false;
#endif

struct Mvue24Traits {
  static constexpr int kThreads = 256;
  static constexpr int kTileTokens = 128, kTileFeatures = 128;  // token_major
  static constexpr int kRowThreads = 64, kRowFeatures = 4;      // feature_major CTA: 64 x 4
};

template <class T> constexpr bool kIsBf16 = std::is_same_v<T, __nv_bfloat16>;

/// Per-thread MVUE of G = kTok / 4 consecutive groups of one feature (row), 16-bit types:
/// w = the kTok raw elements as words (x0 | x1 << 16, ...), rnd = one Philox word per group.
/// Writes the stored pair words and the nibbles (group g at bits 4g); fast path first, the
/// full rule for the whole thread if any group needs it.
/// kLean: the ALU-lean form of the fast path (mvue_window16x2_lean, variants 6 / 7; same outputs).
template <bool kBf16, int G, bool kLean = false>
__device__ __forceinline__ void mvue_row16(const std::uint32_t (&w)[2 * G], const std::uint32_t (&rnd)[G],
                                           std::uint32_t (&pair)[G], std::uint32_t& nibs, bool try_fast) {
  bool ok = try_fast;
  std::uint32_t acc[(G + 3) / 4];
  static_assert(G % 2 == 0);
  if constexpr (kLean) {
    float nibf[(G + 3) / 4];
#pragma unroll
    for (int h = 0; h < (G + 3) / 4; ++h) nibf[h] = kMvueLeanNib0;
#pragma unroll
    for (int g = 0; g < G; g += 2)
      ok &= mvue_window16x2_lean<kBf16>(w[2 * g], w[2 * g + 1], rnd[g], w[2 * g + 2], w[2 * g + 3], rnd[g + 1], pair[g],
                                        pair[g + 1], nibf[g / 4], g % 4, (g + 1) % 4);
#pragma unroll
    for (int h = 0; h < (G + 3) / 4; ++h) acc[h] = f32_bits(nibf[h]) & 0xffffu;  // 0x4B00 above the nibbles
  } else {
#pragma unroll
    for (int h = 0; h < (G + 3) / 4; ++h) acc[h] = 0x4444u;
#pragma unroll
    for (int g = 0; g < G; g += 2)  // pairs of groups: one F2FP converts both levels
      ok &= mvue_window16x2<kBf16>(w[2 * g], w[2 * g + 1], rnd[g], w[2 * g + 2], w[2 * g + 3], rnd[g + 1], pair[g],
                                   pair[g + 1], acc[g / 4], g % 4, (g + 1) % 4);
  }
  nibs = G > 4 ? acc[0] | (acc[G > 4 ? 1 : 0] << 16) : acc[0];
  if constexpr (kMvueProbe) nibs ^= ok ? 0u : 1u;  // keeps the validity tests live in the probe
  if (!ok && !kMvueProbe) {
    nibs = 0;  // rare; unrolled so that the arrays stay in registers (no local memory)
#pragma unroll
    for (int g = 0; g < G; ++g) {
      std::uint32_t nib;
      mvue_window16_full<kBf16>(w[2 * g], w[2 * g + 1], rnd[g], pair[g], nib);
      nibs |= nib << (4 * g);
    }
  }
}

/// The same for f32: w = kTok raw words, pair = (lo, hi) words per group.
template <int G>
__device__ __forceinline__ void mvue_row32(const std::uint32_t (&w)[4 * G], const std::uint32_t (&rnd)[G],
                                           std::uint32_t (&pair)[2 * G], std::uint32_t& nibs, bool try_fast) {
  bool ok = try_fast;
  std::uint32_t acc[(G + 3) / 4];
#pragma unroll
  for (int h = 0; h < (G + 3) / 4; ++h) acc[h] = 0x4444u;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const std::uint32_t r[4] = {w[4 * g], w[4 * g + 1], w[4 * g + 2], w[4 * g + 3]};
    ok &= mvue_window32(r, rnd[g], pair[2 * g], pair[2 * g + 1], acc[g / 4], g % 4);
  }
  nibs = G > 4 ? acc[0] | (acc[G > 4 ? 1 : 0] << 16) : acc[0];
  if constexpr (kMvueProbe) nibs ^= ok ? 0u : 1u;
  if (!ok && !kMvueProbe) {
    nibs = 0;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      std::uint32_t nib;
      const std::uint32_t r[4] = {w[4 * g], w[4 * g + 1], w[4 * g + 2], w[4 * g + 3]};
      mvue_window32_full(r, rnd[g], pair[2 * g], pair[2 * g + 1], nib);
      nibs |= nib << (4 * g);
    }
  }
}

/// The Philox words of groups 4q .. 4q + 4*Q - 1 of feature `row`.
template <int Q>
__device__ __forceinline__ void mvue_words(const PhiloxKeys& keys, std::uint64_t row, std::uint64_t q,
                                           std::uint32_t (&rnd)[4 * Q]) {
#pragma unroll
  for (int k = 0; k < Q; ++k) {
    const Philox4 r = philox4x32_10(std::uint32_t(q + k), std::uint32_t((q + k) >> 32), std::uint32_t(row),
                                    std::uint32_t(row >> 32), keys);
#pragma unroll
    for (int j = 0; j < 4; ++j) rnd[4 * k + j] = r.v[j];
  }
}

/// Feature-major chunk (feature f, tokens t0 .. t0 + kTok - 1), guarded element loads (tails,
/// unaligned shapes): elements past the matrix read as 0.
template <class T, int kTok>
__device__ __forceinline__ void mvue_fm_load_guarded(const Mvue24Args& args, std::int64_t f, std::int64_t t0,
                                                     std::uint32_t (&w)[sizeof(typename Elem<T>::Raw) == 2 ? kTok / 2 : kTok]) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = k16 ? kTok / 2 : kTok;
  const std::int64_t T_ = args.tokens;
  const Raw* src = static_cast<const Raw*>(args.g) + f * T_ + t0;
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    if constexpr (k16) {
      const std::uint32_t lo = t0 + 2 * i < T_ ? src[2 * i] : 0u, hi = t0 + 2 * i + 1 < T_ ? src[2 * i + 1] : 0u;
      w[i] = lo | (hi << 16);
    } else {
      w[i] = t0 + i < T_ ? src[i] : 0u;
    }
  }
}

/// Feature-major chunk: the stores of its stored pair words and nibbles (vec: a whole aligned
/// chunk, 16-byte stores; else element / byte stores up to the last window).
template <class T, int kTok>
__device__ __forceinline__ void mvue_fm_store(const Mvue24Args& args, std::int64_t f, std::int64_t t0, bool vec,
                                              const std::uint32_t (&pair)[sizeof(typename Elem<T>::Raw) == 2 ? kTok / 4 : kTok / 2],
                                              std::uint32_t nibs) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int G = kTok / 4, kOut = k16 ? G : 2 * G;
  const std::int64_t T_ = args.tokens;
  const std::int64_t windows = (T_ + 3) / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  Raw* __restrict__ out = static_cast<Raw*>(args.values);
  const std::int64_t w0 = t0 / 4;
  if (vec) {
    if (out) {
#pragma unroll
      for (int v = 0; v < kOut / 4; ++v)
        __stcs(reinterpret_cast<uint4*>(out + f * vcols + 2 * w0) + v,
               make_uint4(pair[4 * v], pair[4 * v + 1], pair[4 * v + 2], pair[4 * v + 3]));
    }
    if (args.indices) {
      if constexpr (G == 8) __stcs(reinterpret_cast<unsigned int*>(args.indices + f * irb + w0 / 2), nibs);
      else *reinterpret_cast<std::uint16_t*>(args.indices + f * irb + w0 / 2) = std::uint16_t(nibs);
    }
  } else {
#pragma unroll
    for (int b = 0; b < G; ++b) {
      if (w0 + b >= windows) break;
      if (out) {
        Raw* o = out + f * vcols + 2 * (w0 + b);
        if constexpr (k16) o[0] = Raw(pair[b] & 0xffffu), o[1] = Raw(pair[b] >> 16);
        else o[0] = pair[2 * b], o[1] = pair[2 * b + 1];
      }
      if (args.indices && b % 2 == 0)
        args.indices[f * irb + (w0 + b) / 2] =
            std::uint8_t(w0 + b + 1 < windows ? (nibs >> (4 * b)) & 0xffu : (nibs >> (4 * b)) & 0xfu);
    }
  }
}

/// Feature-major chunk: MVUE of the words w (vec: a whole aligned chunk) and its stores.
template <class T, int kTok, bool kLean = false>
__device__ __forceinline__ void mvue_fm_chunk(const Mvue24Args& args, std::int64_t f, std::int64_t t0, bool vec,
                                              const std::uint32_t (&w)[sizeof(typename Elem<T>::Raw) == 2 ? kTok / 2 : kTok]) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int G = kTok / 4, kOut = k16 ? G : 2 * G;
  std::uint32_t pair[kOut], nibs;
  std::uint32_t rnd[G];
  mvue_words<G / 4>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16), rnd);
  if constexpr (k16) mvue_row16<kIsBf16<T>, G, kLean>(w, rnd, pair, nibs, vec);
  else mvue_row32<G>(w, rnd, pair, nibs, vec);
  mvue_fm_store<T, kTok>(args, f, t0, vec, pair, nibs);
}

/// Feature-major, variants 1 / 6 (kLean): one kTok-token chunk of one feature per thread.
template <class T, int kTok, bool kLean = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads) mvue24_feature_major_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = k16 ? kTok / 2 : kTok;
  const std::int64_t T_ = args.tokens, N = args.features;
  const std::int64_t t0 = (std::int64_t(blockIdx.x) * Mvue24Traits::kRowThreads + threadIdx.x) * kTok;
  if (t0 >= T_) return;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  const bool vec = kMvueProbe || (args.aligned && t0 + kTok <= T_);
  for (std::int64_t f = std::int64_t(blockIdx.y) * Mvue24Traits::kRowFeatures + threadIdx.y; f < N;
       f += std::int64_t(gridDim.y) * Mvue24Traits::kRowFeatures) {
    std::uint32_t w[kWords];
    if (vec) {
      const Raw* src = g + f * T_ + t0;
#pragma unroll
      for (int v = 0; v < kWords / 4; ++v) {
        const uint4 q = __ldcs(reinterpret_cast<const uint4*>(src) + v);
        w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
      }
    } else {
      mvue_fm_load_guarded<T, kTok>(args, f, t0, w);
    }
    mvue_fm_chunk<T, kTok, kLean>(args, f, t0, vec, w);
  }
}

/// One 16-byte streaming load that the compiler can neither merge with another load of the same
/// address nor move (volatile asm): the full-rule path of variant 10 re-reads its chunk with it, so
/// that the fast path's words need not stay live for it.
__device__ __forceinline__ uint4 ldcs_reread(const void* p) {
  uint4 q;
  asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "l"(p));
  return q;
}

/// The same for one 4-byte word (the full-rule path of variants 18, 23, 24).
__device__ __forceinline__ std::uint32_t ldcs_reread32(const void* p) {
  std::uint32_t r;
  asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(r) : "l"(p));
  return r;
}

/// Variant 10 (16-bit feature-major, tokens % 32 == 0; docs/PERF-train.md "Session 6b"): variant 6
/// (32-token chunks, the ALU-lean fast path, one fast-path check per chunk) with short live
/// ranges, so that bf16 fits 64 registers (4 CTAs of 256 = 32 warps per SM) without spilling:
/// - the Philox words of groups 4h .. 4h + 3 are made just before them (one call per 16 tokens),
///   each word pair dies with its window pair;
/// - the rare full rule (some group not on the fast path) re-reads the chunk (ldcs_reread) and
///   re-makes its Philox words per 16-token half instead of keeping the 16 words and 8 Philox
///   words of the fast path live until its validity is known;
/// - guarded chunks (tails, unaligned) run the full rule directly (element loads per half; the
///   fast path's result was discarded there anyway).
/// Outputs identical to variant 6 and the host rule. kMinBlocks = 5 (variant 10): 48 registers,
/// 40 warps per SM (the uncapped form, session 6b's variant 9, measured 0.94-0.97x of it in the same run and was
/// dropped in session 9, as was its cp.async-staged form, session 7's variant 11).
template <class T, int kMinBlocks = 5>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_feature_major_jit_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  static_assert(sizeof(Raw) == 2, "variant 10: 16-bit types");
  constexpr bool kBf16 = kIsBf16<T>;
  const std::int64_t T_ = args.tokens, N = args.features;
  const std::int64_t t0 = (std::int64_t(blockIdx.x) * Mvue24Traits::kRowThreads + threadIdx.x) * 32;
  if (t0 >= T_) return;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  const bool vec = kMvueProbe || (args.aligned && t0 + 32 <= T_);
  for (std::int64_t f = std::int64_t(blockIdx.y) * Mvue24Traits::kRowFeatures + threadIdx.y; f < N;
       f += std::int64_t(gridDim.y) * Mvue24Traits::kRowFeatures) {
    std::uint32_t pair[8], nibs = 0;
    bool ok = false;
    if (vec) {
      std::uint32_t w[16];
      const uint4* src = reinterpret_cast<const uint4*>(g + f * T_ + t0);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const uint4 q = __ldcs(src + v);
        w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
      }
      ok = true;
      float nibf[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t rnd[4];
        mvue_words<1>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16 + h), rnd);
        nibf[h] = kMvueLeanNib0;
#pragma unroll
        for (int g2 = 0; g2 < 4; g2 += 2) {
          const int i = 8 * h + 2 * g2;
          ok &= mvue_window16x2_lean<kBf16>(w[i], w[i + 1], rnd[g2], w[i + 2], w[i + 3], rnd[g2 + 1], pair[4 * h + g2],
                                            pair[4 * h + g2 + 1], nibf[h], g2, g2 + 1);
        }
      }
      nibs = (f32_bits(nibf[0]) & 0xffffu) | (f32_bits(nibf[1]) << 16);  // 0x4B00 above each nibble word
      if constexpr (kMvueProbe) nibs ^= ok ? 0u : 1u;  // keeps the validity tests live in the probe
    }
    if (!ok && !kMvueProbe) {  // rare (or a guarded chunk): the full rule per 16-token half
      nibs = 0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t w2[8], rnd[4];
        if (vec) {
          const Raw* src = g + f * T_ + t0 + 16 * h;
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            const uint4 q = ldcs_reread(src + 8 * v);
            w2[4 * v] = q.x, w2[4 * v + 1] = q.y, w2[4 * v + 2] = q.z, w2[4 * v + 3] = q.w;
          }
        } else {
          mvue_fm_load_guarded<T, 16>(args, f, t0 + 16 * h, w2);
        }
        mvue_words<1>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16 + h), rnd);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          std::uint32_t nib;
          mvue_window16_full<kBf16>(w2[2 * k], w2[2 * k + 1], rnd[k], pair[4 * h + k], nib);
          nibs |= nib << (4 * (4 * h + k));
        }
      }
    }
    mvue_fm_store<T, 32>(args, f, t0, vec, pair, nibs);
  }
}

/// The guarded write-out of a shared hw24 output tile (Tile24, TileW64: kRows x kWindows, value
/// chunks at Tile::slot, nibble words at kNibPitch) for edge tiles and unaligned rows: element and
/// byte stores, each checked against out_rows and windows. Called by all threads after a barrier.
template <class Tile, class Raw>
__device__ __forceinline__ void write_tile_guarded(const Tile& t, Raw* __restrict__ values, std::uint8_t* __restrict__ indices,
                                                   std::int64_t row0, std::int64_t win0, std::int64_t out_rows,
                                                   std::int64_t windows) {
  constexpr int kRows = Tile::kRows, kWindows = Tile::kWindows, kChunks = Tile::kChunks, kNibPitch = Tile::kNibPitch;
  constexpr int kElemsPerChunk = 16 / int(sizeof(Raw));
  const int tid = threadIdx.x;
  const std::int64_t vcols = 2 * windows, irb = (windows + 1) / 2;
  if (values) {
    for (int i = tid; i < kRows * kChunks * kElemsPerChunk; i += Mvue24Traits::kThreads) {
      const int row = i / (kChunks * kElemsPerChunk), e = i % (kChunks * kElemsPerChunk);
      if (row0 + row >= out_rows || 2 * win0 + e >= vcols) continue;
      const Raw* c = reinterpret_cast<const Raw*>(&t.vals[Tile::slot(row, e / kElemsPerChunk)]);
      values[(row0 + row) * vcols + 2 * win0 + e] = c[e % kElemsPerChunk];
    }
  }
  if (indices) {
    for (int i = tid; i < kRows * kWindows / 2; i += Mvue24Traits::kThreads) {
      const int row = i / (kWindows / 2), b = i % (kWindows / 2);
      const std::int64_t gb = win0 / 2 + b, w = win0 + 2 * b;
      if (row0 + row >= out_rows || w >= windows) continue;
      unsigned byte = (t.nib[row * kNibPitch + b / 2] >> (8 * (b & 1))) & 0xffu;
      if (w + 1 >= windows) byte &= 0xfu;
      indices[(row0 + row) * irb + gb] = std::uint8_t(byte);
    }
  }
}

/// 128 feature rows x 32 windows of hw24 output in shared memory: value words with 16-byte
/// chunks swizzled (chunk ^ (row / 4) % 8: the per-feature 16-byte deposits of a warp and the
/// row-wise reads are conflict-free), nibbles as 16-bit words (4 windows) at a 9-word pitch.
template <class Raw>
struct Tile24 {
  static constexpr int kRows = 128, kWindows = 32, kSwShift = 2;
  static constexpr int kRowWords = sizeof(Raw) == 2 ? kWindows : 2 * kWindows, kChunks = kRowWords / 4;
  static constexpr int kNibPitch = 9;  ///< u16 per row (8 used)
  uint4 vals[kRows * kChunks];
  std::uint16_t nib[kRows * kNibPitch];

  static __device__ __forceinline__ int slot(int row, int chunk) { return row * kChunks + (chunk ^ ((row >> kSwShift) & 7)); }

  /// Writes the tile to output rows [row0, row0 + 128) x windows [win0, win0 + 32) of a hw24
  /// matrix with out_rows rows and `windows` windows; fast: interior tile, 16-byte (values) and
  /// 4-byte (indices) aligned rows. Called by all threads after a __syncthreads().
  __device__ __forceinline__ void write(Raw* __restrict__ values, std::uint8_t* __restrict__ indices, std::int64_t row0,
                                        std::int64_t win0, std::int64_t out_rows, std::int64_t windows, bool fast) const {
    const int tid = threadIdx.x;
    const std::int64_t vcols = 2 * windows, irb = (windows + 1) / 2;
    if (fast) {
      if (values) {
        // thread: chunk tid % kChunks of rows tid / kChunks + j * kStep (fixed count, so the
        // smem offsets are immediates and the global address advances by a constant)
        constexpr int kStep = Mvue24Traits::kThreads / kChunks;
        const int row = tid / kChunks, ch = tid % kChunks, sw = row >> kSwShift;
        uint4* dst = reinterpret_cast<uint4*>(values + (row0 + row) * vcols + 2 * win0) + ch;
        const std::int64_t step = kStep * vcols * std::int64_t(sizeof(Raw)) / 16;  // in uint4
#pragma unroll
        for (int j = 0; j < kRows / kStep; ++j)  // slot(row + j kStep, ch), the swizzle from row >> kSwShift
          __stcs(dst + j * step, vals[(row + j * kStep) * kChunks + (ch ^ ((sw + j * (kStep >> kSwShift)) & 7))]);
      }
      if (indices) {
        const int row = tid / 2, h = tid % 2;  // 8 bytes (4 u16) of the row's 16
        const std::uint16_t* n = nib + row * kNibPitch + 4 * h;
        std::uint32_t* dst = reinterpret_cast<std::uint32_t*>(indices + (row0 + row) * irb + win0 / 2 + 8 * h);
        __stcs(dst, std::uint32_t(n[0]) | (std::uint32_t(n[1]) << 16));
        __stcs(dst + 1, std::uint32_t(n[2]) | (std::uint32_t(n[3]) << 16));
      }
      return;
    }
    write_tile_guarded(*this, values, indices, row0, win0, out_rows, windows);
  }
};

/// Words per token row per thread in the token-major kernels (4 features).
template <class Raw>
constexpr int kTmWords = sizeof(Raw) == 2 ? 2 : 4;

/// Token-major: the thread's 16 tokens x 4 features by guarded element loads (edge tiles,
/// unaligned shapes); elements past the matrix read as 0.
template <class T>
__device__ __forceinline__ void mvue_tm_load_guarded(const Mvue24Args& args, std::int64_t f0, std::int64_t t0,
                                                     std::uint32_t (&x)[16][kTmWords<typename Elem<T>::Raw>]) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  const std::int64_t T_ = args.tokens, N = args.features;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
#pragma unroll
  for (int t = 0; t < 16; ++t)
#pragma unroll
    for (int j = 0; j < kTmWords<Raw>; ++j) {
      if constexpr (k16) {
        const std::int64_t f = f0 + 2 * j;
        const std::uint32_t lo = (t0 + t < T_ && f < N) ? g[(t0 + t) * N + f] : 0u;
        const std::uint32_t hi = (t0 + t < T_ && f + 1 < N) ? g[(t0 + t) * N + f + 1] : 0u;
        x[t][j] = lo | (hi << 16);
      } else {
        x[t][j] = (t0 + t < T_ && f0 + j < N) ? g[(t0 + t) * N + f0 + j] : 0u;
      }
    }
}

/// Token-major: MVUE of the thread's 4 features x 16 tokens (x) and their deposit into the tile
/// (row 4 fp + k, window chunk tg).
template <class T, bool kLean = false, class Tile>
__device__ __forceinline__ void mvue_tm_compute(const Mvue24Args& args, std::int64_t f0, std::int64_t t0, int fp, int tg,
                                                const std::uint32_t (&x)[16][kTmWords<typename Elem<T>::Raw>], Tile& tile) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // feature f0 + k
    std::uint32_t rnd[4], nibs;
    mvue_words<1>(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), rnd);  // t0 % 16 == 0
    const int row = 4 * fp + k;
    if constexpr (k16) {
      std::uint32_t w[8], pair[4];
      const std::uint32_t sel = (k & 1) ? 0x7632u : 0x5410u;  // the half of feature k from two token words
#pragma unroll
      for (int i = 0; i < 8; ++i) w[i] = prmt(x[2 * i][k / 2], x[2 * i + 1][k / 2], sel);
      mvue_row16<kIsBf16<T>, 4, kLean>(w, rnd, pair, nibs, true);
      tile.vals[Tile::slot(row, tg)] = make_uint4(pair[0], pair[1], pair[2], pair[3]);
    } else {
      std::uint32_t w[16], pair[8];
#pragma unroll
      for (int i = 0; i < 16; ++i) w[i] = x[i][k];
      mvue_row32<4>(w, rnd, pair, nibs, true);
      tile.vals[Tile::slot(row, 2 * tg)] = make_uint4(pair[0], pair[1], pair[2], pair[3]);
      tile.vals[Tile::slot(row, 2 * tg + 1)] = make_uint4(pair[4], pair[5], pair[6], pair[7]);
    }
    tile.nib[row * Tile::kNibPitch + tg] = std::uint16_t(nibs);
  }
}

/// Token-major, variants 1 / 6 (kLean): 128 x 128 CTA tiles, threads of 16 tokens x 4 features.
template <class T, bool kLean = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads) mvue24_token_major_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  using Traits = Mvue24Traits;
  constexpr bool k16 = sizeof(Raw) == 2;
  __shared__ Tile24<Raw> tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % 32, tg = tid / 32;
  const std::int64_t f_tile = blockIdx.x, t_tile = blockIdx.y;
  const std::int64_t f0 = f_tile * Traits::kTileFeatures + 4 * fp, t0 = t_tile * Traits::kTileTokens + 16 * tg;
  const bool fast =
      kMvueProbe || (args.aligned && (f_tile + 1) * Traits::kTileFeatures <= N && (t_tile + 1) * Traits::kTileTokens <= T_);
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);

  std::uint32_t x[16][kTmWords<Raw>];  // x[t][j]: token t0 + t, features f0 + (k16 ? 2j, 2j+1 : j)
  if (fast) {
#pragma unroll
    for (int t = 0; t < 16; ++t) {
      if constexpr (k16) {
        const uint2 p = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
        x[t][0] = p.x, x[t][1] = p.y;
      } else {
        const uint4 p = __ldcs(reinterpret_cast<const uint4*>(g + (t0 + t) * N + f0));
        x[t][0] = p.x, x[t][1] = p.y, x[t][2] = p.z, x[t][3] = p.w;
      }
    }
  } else {
    mvue_tm_load_guarded<T>(args, f0, t0, x);
  }
  mvue_tm_compute<T, kLean>(args, f0, t0, fp, tg, x, tile);
  __syncthreads();
  tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * Traits::kTileFeatures,
             t_tile * (Traits::kTileTokens / 4), N, windows, fast);
}

/// Variants 18, 23, 24 (16-bit token-major; docs/PERF-train.md "Session 7b", "Session 7c",
/// "Session 8 (MVUE)"): variant 6 (threads of 16 tokens x 4 features, 8-byte loads, the lean fast
/// path) with the short live ranges of variant 10: per feature its Philox words are made just
/// before it, and the rare full rule (some group off the fast path) re-makes them and re-reads its
/// 16 token words from global memory (ldcs_reread32) instead of keeping the fast path's words,
/// Philox words and the consumed input words live for it; under a 4-CTA register cap (64
/// registers, 32 warps per SM) on variant 3's geometry (256-token x 64-feature tiles, TileW64:
/// warp loads of 2 whole 128-byte lines, whole-line value stores and whole-sector index stores).
/// Edge tiles / unaligned shapes: guarded loads, the full rule from x, the guarded write-out.
/// Outputs identical to variant 1 and the host rule.
///
/// The Philox words of feature 0 are made between the loads' issue and their first use ("Session
/// 7c"). Program order alone does not do it (ptxas places the first PRMT of the loaded words
/// before feature 0's Philox chain, so the warp waits on its loads with that load-independent
/// chain queued behind), so the PRMT selectors of the fast path carry a data dependency on the
/// last Philox word: sel | (word & z) with z an opaque zero (the kernel runs for token-major calls
/// only: z = token_major ? 0 : ~0), which makes every consumer of the loaded words wait for the
/// chain. One LOP3 per selector.
///
/// kOpt ("Session 8 (MVUE)"), bits: kMvueTmFmaCvt: the bf16 conversions on the FMA pipe
/// (halves16_f<true, true>: IMAD.WIDE.U32 + IMAD.U32 instead of IMAD.U32 + LOP3; bf16 measured
/// 0.975-0.99x; f16 has no bf16 conversions); kMvueTmTokenX: blockIdx.x walks the token tiles,
/// blockIdx.y the feature tiles (the launcher's grid is transposed to match; +0.3-0.6 %).
/// 18: kOpt = 0; 23: kMvueTmFmaCvt | kMvueTmTokenX; 24: kMvueTmTokenX (where the feature tiles
/// exceed gridDim.y's limit the launcher runs kTokenX off).
template <class Raw>
struct TileW64;  // below (variant 3)
constexpr int kMvueTmFmaCvt = 1, kMvueTmTokenX = 4;
template <class T, int kOpt = 0>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, 4) mvue24_token_major_jit_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  static_assert(sizeof(Raw) == 2, "variants 18, 23, 24: 16-bit types");
  constexpr int kTileT = 256, kTileF = 64, kFp = kTileF / 4;
  using Tile = TileW64<Raw>;
  __shared__ Tile tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % kFp, tg = tid / kFp;
  constexpr bool kTokenX = (kOpt & kMvueTmTokenX) != 0, kFmaCvt = (kOpt & kMvueTmFmaCvt) != 0;
  const std::int64_t f_tile = kTokenX ? blockIdx.y : blockIdx.x, t_tile = kTokenX ? blockIdx.x : blockIdx.y;
  const std::int64_t f0 = f_tile * kTileF + 4 * fp, t0 = t_tile * kTileT + 16 * tg;
  const bool fast = kMvueProbe || (args.aligned && (f_tile + 1) * kTileF <= N && (t_tile + 1) * kTileT <= T_);
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  std::uint32_t x[16][2];  // x[t][j]: token t0 + t, features f0 + 2j, f0 + 2j + 1
  if (fast) {
#pragma unroll
    for (int t = 0; t < 16; ++t) {
      const uint2 p = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
      x[t][0] = p.x, x[t][1] = p.y;
    }
  } else {
    mvue_tm_load_guarded<T>(args, f0, t0, x);
  }
  constexpr int kAhead = 1;  // features whose Philox words are made ahead
  std::uint32_t rnd_ahead[kAhead][4];
  std::uint32_t sel_fast[2] = {0x5410u, 0x7632u};  // the fast path's PRMT selectors (feature k: sel_fast[k % 2])
  if (fast) {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) mvue_words<1>(args.keys, std::uint64_t(f0 + a), std::uint64_t(t0 / 16), rnd_ahead[a]);
    const std::uint32_t z = args.token_major ? 0u : ~0u;  // 0, unknown to the compiler
    const std::uint32_t dep = rnd_ahead[kAhead - 1][3];
    sel_fast[0] |= dep & z, sel_fast[1] |= dep & z;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // feature f0 + k: the half k % 2 of the token words x[t][k / 2]
    const std::uint32_t sel = (k & 1) ? 0x7632u : 0x5410u;
    std::uint32_t pair[4], nibs = 0;
    bool ok = false;
    if (fast) {
      std::uint32_t rnd[4], w[8];
      if (k < kAhead) {
#pragma unroll
        for (int j = 0; j < 4; ++j) rnd[j] = rnd_ahead[k < kAhead ? k : 0][j];
      } else {
        mvue_words<1>(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), rnd);  // t0 % 16 == 0
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) w[i] = prmt(x[2 * i][k / 2], x[2 * i + 1][k / 2], sel_fast[k & 1]);
      float nibf = kMvueLeanNib0;
      ok = true;
#pragma unroll
      for (int g2 = 0; g2 < 4; g2 += 2)
        ok &= mvue_window16x2_lean<kIsBf16<T>, kFmaCvt>(w[2 * g2], w[2 * g2 + 1], rnd[g2], w[2 * g2 + 2], w[2 * g2 + 3],
                                                        rnd[g2 + 1], pair[g2], pair[g2 + 1], nibf, g2, g2 + 1);
      nibs = f32_bits(nibf) & 0xffffu;  // 0x4B00 above the nibbles
      if constexpr (kMvueProbe) nibs ^= ok ? 0u : 1u;
    }
    if (!ok && !kMvueProbe) {
      std::uint32_t rnd[4];
      mvue_words<1>(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), rnd);
      nibs = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        std::uint32_t xa, xb, xc, xd, nib;
        if (fast) {
          const Raw* src = g + (t0 + 4 * q) * N + f0 + 2 * (k / 2);
          xa = ldcs_reread32(src), xb = ldcs_reread32(src + N), xc = ldcs_reread32(src + 2 * N), xd = ldcs_reread32(src + 3 * N);
        } else {
          xa = x[4 * q][k / 2], xb = x[4 * q + 1][k / 2], xc = x[4 * q + 2][k / 2], xd = x[4 * q + 3][k / 2];
        }
        mvue_window16_full<kIsBf16<T>>(prmt(xa, xb, sel), prmt(xc, xd, sel), rnd[q], pair[q], nib);
        nibs |= nib << (4 * q);
      }
    }
    const int row = 4 * fp + k;
    tile.vals[Tile::slot(row, tg)] = make_uint4(pair[0], pair[1], pair[2], pair[3]);
    tile.nib[row * Tile::kNibPitch + tg] = std::uint16_t(nibs);
  }
  __syncthreads();
  const bool idx16 = T_ % 128 == 0 && reinterpret_cast<std::uintptr_t>(args.indices) % 16 == 0;
  tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * kTileF, t_tile * (kTileT / 4), N, windows, fast, idx16);
}

/// Feature-major, variant 3 (whole-line stores, docs/PERF-train.md "Session 3c"): units of 16
/// tokens (one Philox call; 8 values = 16 B of 16-bit output + 2 index bytes). CTA = 64 x 4
/// threads as in variant 1, 128 units (2048 tokens) of 4 features. Warp wx = threadIdx.x / 32
/// owns units [64 wx, 64 wx + 64) of the CTA's span and lane l the units 64 wx + l and
/// 64 wx + 32 + l, so every warp store instruction covers 32 consecutive units: 16-bit values
/// 32 x 16 B = 512 contiguous bytes (4 whole lines; variant 1 wrote 32 half sectors per
/// instruction), indices 32 x 2 B = 64 B (2 whole sectors). f32 (32 B of values per unit):
/// lanes 2k and 2k + 1 exchange one 16-byte half (4 shuffles), so each of the two store
/// instructions writes 16 whole sectors. Loads as in variant 1 (16-byte, L1-cached).
template <class T, int kMinBlocks = 0, bool kLean = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_feature_major_lines_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = k16 ? 8 : 16, kOut = k16 ? 4 : 8;
  const std::int64_t T_ = args.tokens, N = args.features;
  const std::int64_t windows = (T_ + 3) / 4, vcols = 2 * windows, irb = (windows + 1) / 2;
  const int lane = threadIdx.x & 31;
  const std::int64_t ubase = std::int64_t(blockIdx.x) * 128 + (threadIdx.x >> 5) * 64 + lane;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  Raw* __restrict__ out = static_cast<Raw*>(args.values);
  for (std::int64_t f = std::int64_t(blockIdx.y) * Mvue24Traits::kRowFeatures + threadIdx.y; f < N;
       f += std::int64_t(gridDim.y) * Mvue24Traits::kRowFeatures) {  // warp-uniform (threadIdx.y)
    std::uint32_t w[2][kWords];
    bool vec[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const std::int64_t t0 = 16 * (ubase + 32 * u);
      vec[u] = kMvueProbe || (args.aligned && t0 + 16 <= T_);
      if (vec[u]) {
        const uint4* src = reinterpret_cast<const uint4*>(g + f * T_ + t0);
#pragma unroll
        for (int v = 0; v < kWords / 4; ++v) {
          const uint4 q = __ldcs(src + v);
          w[u][4 * v] = q.x, w[u][4 * v + 1] = q.y, w[u][4 * v + 2] = q.z, w[u][4 * v + 3] = q.w;
        }
      } else if (t0 < T_) {
        mvue_fm_load_guarded<T, 16>(args, f, t0, w[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const std::int64_t t0 = 16 * (ubase + 32 * u);
      if (!__all_sync(0xffffffffu, vec[u])) {  // tail / unaligned: the variant-1 per-thread path
        if (t0 < T_) mvue_fm_chunk<T, 16, kLean>(args, f, t0, vec[u], w[u]);
        continue;
      }
      std::uint32_t rnd[4], pair[kOut], nibs;
      mvue_words<1>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16), rnd);
      if constexpr (k16) mvue_row16<kIsBf16<T>, 4, kLean>(w[u], rnd, pair, nibs, true);
      else mvue_row32<4>(w[u], rnd, pair, nibs, true);
      const std::int64_t w0 = t0 / 4;
      if (out) {
        if constexpr (k16) {
          __stcs(reinterpret_cast<uint4*>(out + f * vcols + 2 * w0), make_uint4(pair[0], pair[1], pair[2], pair[3]));
        } else {
          // even lane: its half 0 -> its unit, the odd lane's half 0 -> the odd lane's unit;
          // odd lane: the even lane's half 1 -> the even lane's unit, its half 1 -> its unit
          const bool odd = lane & 1;
          std::uint32_t a[4], b[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const std::uint32_t recv = __shfl_xor_sync(0xffffffffu, odd ? pair[j] : pair[4 + j], 1);
            a[j] = odd ? recv : pair[j];
            b[j] = odd ? pair[4 + j] : recv;
          }
          Raw* even_unit = out + f * vcols + 2 * w0 - (odd ? 8 : 0) + (odd ? 4 : 0);
          __stcs(reinterpret_cast<uint4*>(even_unit), make_uint4(a[0], a[1], a[2], a[3]));
          __stcs(reinterpret_cast<uint4*>(even_unit + 8), make_uint4(b[0], b[1], b[2], b[3]));
        }
      }
      if (args.indices) *reinterpret_cast<std::uint16_t*>(args.indices + f * irb + w0 / 2) = std::uint16_t(nibs);
    }
  }
}

/// 64 feature rows x 64 windows (256 tokens) of hw24 output in shared memory for the token-major
/// variant 3: a CTA's piece of every output row is 256 B of 16-bit values (512 B f32) and 32 B
/// of indices, so the write-out stores whole lines (values) and whole sectors (indices, one
/// 16-byte store per half row) and no sector is shared with another CTA (variant 1's 128-token
/// tile: 16 index bytes per row, half a sector, the other half written by the next CTA).
/// Values: 16-byte chunks swizzled (chunk ^ (row / 4) % 8: conflict-free deposits and reads);
/// nibbles: 16-bit words (4 windows) at an odd 9-word pitch.
template <class Raw>
struct TileW64 {
  static constexpr int kRows = 64, kWindows = 64;
  static constexpr int kRowWords = sizeof(Raw) == 2 ? kWindows : 2 * kWindows, kChunks = kRowWords / 4;
  static constexpr int kNibPitch = 18;  ///< u16 per row (16 used)
  uint4 vals[kRows * kChunks];
  std::uint16_t nib[kRows * kNibPitch];

  static __device__ __forceinline__ int slot(int row, int chunk) { return row * kChunks + (chunk ^ ((row >> 2) & 7)); }

  /// As Tile24::write; idx16: index rows are 16-byte aligned (one 16-byte store per half row,
  /// else four 4-byte stores).
  __device__ __forceinline__ void write(Raw* __restrict__ values, std::uint8_t* __restrict__ indices, std::int64_t row0,
                                        std::int64_t win0, std::int64_t out_rows, std::int64_t windows, bool fast,
                                        bool idx16) const {
    const int tid = threadIdx.x;
    const std::int64_t vcols = 2 * windows, irb = (windows + 1) / 2;
    if (fast) {
      if (values) {
        constexpr int kStep = Mvue24Traits::kThreads / kChunks;  // rows per round: a warp stores 2 (1) whole rows
        const int row = tid / kChunks, ch = tid % kChunks, sw = row >> 2;
        uint4* dst = reinterpret_cast<uint4*>(values + (row0 + row) * vcols + 2 * win0) + ch;
        const std::int64_t step = kStep * vcols * std::int64_t(sizeof(Raw)) / 16;  // in uint4
#pragma unroll
        for (int j = 0; j < kRows / kStep; ++j)
          __stcs(dst + j * step, vals[(row + j * kStep) * kChunks + (ch ^ ((sw + j * (kStep / 4)) & 7))]);
      }
      if (indices && tid < 2 * kRows) {
        const int row = tid / 2, h = tid % 2;  // 16 bytes (8 u16) of the row's 32
        const std::uint32_t* n = reinterpret_cast<const std::uint32_t*>(nib) + row * (kNibPitch / 2) + 4 * h;
        std::uint8_t* dst = indices + (row0 + row) * irb + win0 / 2 + 16 * h;
        if (idx16) {
          __stcs(reinterpret_cast<uint4*>(dst), make_uint4(n[0], n[1], n[2], n[3]));
        } else {
#pragma unroll
          for (int k = 0; k < 4; ++k) __stcs(reinterpret_cast<std::uint32_t*>(dst) + k, n[k]);
        }
      }
      return;
    }
    write_tile_guarded(*this, values, indices, row0, win0, out_rows, windows);
  }
};

/// Token-major, variant 3: CTA tile 256 tokens x 64 features (TileW64). Thread (fp = tid % 16,
/// tg = tid / 16) reads features 4fp .. 4fp+3 of tokens 16tg .. 16tg+15 (a warp load covers 2
/// token rows x 128 B (16-bit) / 256 B (f32): whole lines), the same per-thread compute as
/// variant 1, one barrier, the whole-line write-out.
template <class T, int kMinBlocks = 0, bool kLean = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_token_major_lines_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kTileT = 256, kTileF = 64;
  __shared__ TileW64<Raw> tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % 16, tg = tid / 16;
  const std::int64_t f_tile = blockIdx.x, t_tile = blockIdx.y;
  const std::int64_t f0 = f_tile * kTileF + 4 * fp, t0 = t_tile * kTileT + 16 * tg;
  const bool fast = kMvueProbe || (args.aligned && (f_tile + 1) * kTileF <= N && (t_tile + 1) * kTileT <= T_);
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  std::uint32_t x[16][kTmWords<Raw>];
  if (fast) {
#pragma unroll
    for (int t = 0; t < 16; ++t) {
      if constexpr (k16) {
        const uint2 p = __ldcs(reinterpret_cast<const uint2*>(g + (t0 + t) * N + f0));
        x[t][0] = p.x, x[t][1] = p.y;
      } else {
        const uint4 p = __ldcs(reinterpret_cast<const uint4*>(g + (t0 + t) * N + f0));
        x[t][0] = p.x, x[t][1] = p.y, x[t][2] = p.z, x[t][3] = p.w;
      }
    }
  } else {
    mvue_tm_load_guarded<T>(args, f0, t0, x);
  }
  mvue_tm_compute<T, kLean>(args, f0, t0, fp, tg, x, tile);
  __syncthreads();
  const bool idx16 = T_ % 128 == 0 && reinterpret_cast<std::uintptr_t>(args.indices) % 16 == 0;
  tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * kTileF, t_tile * (kTileT / 4), N, windows, fast, idx16);
}

/// The resident 256-thread CTAs per SM that variant 7 (variant 3 with the lean fast path under
/// __launch_bounds__(256, this)) asks for: 4 (<= 64 registers, 32 warps). docs/PERF-train.md
/// "Session 4", "Session 5".
constexpr int kMvueOccBlocks = 4;

template <class T>
void launch_mvue24_impl(const Mvue24Args& a, cudaStream_t s) {
  using Traits = Mvue24Traits;
  constexpr bool k16 = sizeof(typename Elem<T>::Raw) == 2;
  constexpr DType kDtype = std::is_same_v<T, float> ? DType::f32 : kIsBf16<T> ? DType::bf16 : DType::f16;
  check_mvue24_variant(a.variant);
  int variant = a.variant != 0 ? a.variant : mvue24_default_variant(kDtype, a.token_major, a.tokens, a.features);
  // the 16-bit-only variants on f32: 6 -> 1, 7 -> 3, 10 / 18 / 23 / 24 -> 1 (the kernels without
  // the 16-bit fast path); 10 token-major or with tokens % 32 != 0 -> 6; 18 / 23 / 24
  // feature-major -> 6
  if (!k16 && variant != 1 && variant != 3) variant = variant == 7 ? 3 : 1;
  if (variant == 10 && (a.token_major || a.tokens % 32 != 0)) variant = 6;
  if (variant >= 18 && !a.token_major) variant = 6;
  // one launch, with the occupancy control's padding if asked for (Mvue24Args::max_ctas_per_sm)
  auto go = [&](auto kernel, dim3 grid, dim3 block) {
    const std::size_t smem = occupancy_cap_smem(kernel, int(block.x * block.y), a.max_ctas_per_sm);
    kernel<<<grid, block, smem, s>>>(a);
  };
  const dim3 fm_block(Traits::kRowThreads, Traits::kRowFeatures);
  const unsigned fy = unsigned(std::min<std::int64_t>((a.features + Traits::kRowFeatures - 1) / Traits::kRowFeatures, 65535));
  if (variant == 3 || variant == 7) {  // whole-line stores; 7: the lean fast path under the 4-CTA register cap
    if (a.token_major) {
      const dim3 grid(unsigned((a.features + 63) / 64), unsigned((a.tokens + 255) / 256));
      if constexpr (k16) {
        if (variant == 7) go(mvue24_token_major_lines_kernel<T, kMvueOccBlocks, true>, grid, dim3(Traits::kThreads));
        else go(mvue24_token_major_lines_kernel<T>, grid, dim3(Traits::kThreads));
      } else {
        go(mvue24_token_major_lines_kernel<T>, grid, dim3(Traits::kThreads));
      }
    } else {
      const dim3 grid(unsigned(((a.tokens + 15) / 16 + 127) / 128), fy);
      if constexpr (k16) {
        if (variant == 7) go(mvue24_feature_major_lines_kernel<T, kMvueOccBlocks, true>, grid, fm_block);
        else go(mvue24_feature_major_lines_kernel<T>, grid, fm_block);
      } else {
        go(mvue24_feature_major_lines_kernel<T>, grid, fm_block);
      }
    }
    SPARSENM_CUDA_CHECK_LAUNCH("mvue24_lines_kernel");
    return;
  }
  if constexpr (k16) {
    if (variant == 10) {  // 16-bit feature-major, tokens % 32 == 0: the register-lean chunk kernel, 40 warps
      const dim3 grid(unsigned((a.tokens / 32 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
      go(mvue24_feature_major_jit_kernel<T>, grid, fm_block);
      SPARSENM_CUDA_CHECK_LAUNCH("mvue24_feature_major_jit_kernel");
      return;
    }
    if (variant >= 18) {  // 16-bit token-major, 256 x 64 tiles; 23 / 24: the token tiles along blockIdx.x
      const dim3 grid_lines(unsigned((a.features + 63) / 64), unsigned((a.tokens + 255) / 256));
      const dim3 grid_tx(grid_lines.y, grid_lines.x), block(Traits::kThreads);
      const bool tx_fits = grid_lines.x <= 65535u;  // feature tiles along gridDim.y
      if (variant == 18) go(mvue24_token_major_jit_kernel<T>, grid_lines, block);
      else if (variant == 23 && tx_fits) go(mvue24_token_major_jit_kernel<T, kMvueTmFmaCvt | kMvueTmTokenX>, grid_tx, block);
      else if (variant == 23) go(mvue24_token_major_jit_kernel<T, kMvueTmFmaCvt>, grid_lines, block);
      else if (tx_fits) go(mvue24_token_major_jit_kernel<T, kMvueTmTokenX>, grid_tx, block);
      else go(mvue24_token_major_jit_kernel<T>, grid_lines, block);
      SPARSENM_CUDA_CHECK_LAUNCH("mvue24_token_major_jit_kernel");
      return;
    }
  }
  // 1: one chunk / tile per thread / CTA; 6: 1 with the ALU-lean fast path (16-bit types)
  const bool lean = k16 && variant == 6;
  if (a.token_major) {
    const dim3 grid(unsigned((a.features + Traits::kTileFeatures - 1) / Traits::kTileFeatures),
                    unsigned((a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens));
    if (lean) go(mvue24_token_major_kernel<T, k16>, grid, dim3(Traits::kThreads));
    else go(mvue24_token_major_kernel<T>, grid, dim3(Traits::kThreads));
  } else if (a.tokens % 32 == 0) {
    const dim3 grid(unsigned((a.tokens / 32 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
    if (lean) go(mvue24_feature_major_kernel<T, 32, k16>, grid, fm_block);
    else go(mvue24_feature_major_kernel<T, 32>, grid, fm_block);
  } else {
    const dim3 grid(unsigned(((a.tokens + 15) / 16 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
    if (lean) go(mvue24_feature_major_kernel<T, 16, k16>, grid, fm_block);
    else go(mvue24_feature_major_kernel<T, 16>, grid, fm_block);
  }
  SPARSENM_CUDA_CHECK_LAUNCH("mvue24_kernel");
}

}  // namespace sparsenm::train::detail

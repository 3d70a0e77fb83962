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
// Variant 3 (whole-line stores: feature-major 16-token units per lane, token-major 256 x 64
//   tiles) is the default for f32 feature-major and 16-bit token-major with n % 128 == 64;
//   variant 5 (3 under a 64-register cap, 4 CTAs per SM) for f16 token-major c_fc shapes until
//   session 8 (now 23);
//   variants 6 / 7 (1 / 5 with the ALU-lean fast path, mvue_window16x2_lean) for f16 / bf16
//   feature-major with tokens % 32 != 0 (mvue24_default_variant, docs/PERF-train.md "Session 3c",
//   "Session 4", "Session 5"); variant 10 for 16-bit feature-major with tokens % 32 == 0 ("Session 6b");
//   variant 8 (6 with the 32-token chunk as two 16-token halves: bf16 64 registers instead of 75)
//   is opt-in (measured 0.97-0.99x of the defaults, "Session 6"); variant 9 (6 with short live
//   ranges: Philox words just in time, the rare full rule re-reads its chunk; bf16 51 registers,
//   f16 48) is described at mvue24_feature_major_jit_kernel ("Session 6b"); variant 10 = 9 with
//   5 CTAs per SM (48 registers: 40 warps) is the 16-bit feature-major default (1.03-1.04x).
//   Session 7 (opt-in, measured slower): variant 11 = 10 with the chunk staged in shared memory by
//   cp.async (0.71-0.77x of 10); variants 12-14 = token-major threads of 16 tokens x 2 features
//   (mvue24_token_major_pair_kernel; 0.96-0.98x of variant 1 for bf16, 0.88-0.90x of variant 5
//   for f16; 13 / 14 staged by cp.async, 0.90x / 0.81x).
//   Session 7b: variants 15-17 (mvue24_token_major_jit_kernel: variant 6 with short live ranges;
//   16 at 4 CTAs per SM, 17 = 16 on 256 x 64 tiles); 17 is the bf16 token-major default for
//   n % 128 == 0, n >= 4096 (1.06-1.07x over variant 1).
//   Session 7c: variants 18 / 19 = 17 and 20 = 15 with the Philox words of the first 1 / 2 / 1
//   features made between the loads' issue and their first use (kAhead); 18 replaces 17 as the
//   bf16 token-major default (1.01-1.03x over 17); 19 / 20 opt-in.
//   Session 8: variants 21-24 (kOpt of mvue24_token_major_jit_kernel: bf16 conversions on the FMA
//   pipe, the one-FSETP validity, token tiles along blockIdx.x); 23 (for f16 = 18 with the token
//   tiles along blockIdx.x) is the f16 token-major default for n % 128 == 0, n >= 4096 (1.004x /
//   1.02x over variant 5); 21 / 22 measured slower for bf16, 24 (bf16) not yet measured.
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
/// kHalves (16-bit, kTok = 32; variant 8): the 8 groups as two sequential 4-group halves, each
/// with its own Philox call and fast-path check (the full rule, where needed, for that half
/// only), so that fewer Philox words, pairs and converted values are live at once (docs/PERF-
/// train.md "Session 6"); outputs identical.
template <class T, int kTok, bool kLean = false, bool kHalves = false>
__device__ __forceinline__ void mvue_fm_chunk(const Mvue24Args& args, std::int64_t f, std::int64_t t0, bool vec,
                                              const std::uint32_t (&w)[sizeof(typename Elem<T>::Raw) == 2 ? kTok / 2 : kTok]) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int G = kTok / 4, kOut = k16 ? G : 2 * G;
  static_assert(!kHalves || (k16 && kTok == 32), "halves: 16-bit types, 32 tokens per thread");
  std::uint32_t pair[kOut], nibs;
  if constexpr (kHalves) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint32_t rnd[4], wh[8], ph[4], nh;
      mvue_words<1>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16 + h), rnd);
#pragma unroll
      for (int i = 0; i < 8; ++i) wh[i] = w[8 * h + i];
      mvue_row16<kIsBf16<T>, 4, kLean>(wh, rnd, ph, nh, vec);
#pragma unroll
      for (int i = 0; i < 4; ++i) pair[4 * h + i] = ph[i];
      if (h == 0) nibs = nh;
      else nibs |= nh << 16;
    }
  } else {
    std::uint32_t rnd[G];
    mvue_words<G / 4>(args.keys, std::uint64_t(f), std::uint64_t(t0 / 16), rnd);
    if constexpr (k16) mvue_row16<kIsBf16<T>, G, kLean>(w, rnd, pair, nibs, vec);
    else mvue_row32<G>(w, rnd, pair, nibs, vec);
  }
  mvue_fm_store<T, kTok>(args, f, t0, vec, pair, nibs);
}

/// kMinBlocks > 1: the register cap of the occupancy variant (Mvue24Args::variant 4,
/// mvue24_min_blocks): at least kMinBlocks CTAs of 256 threads resident per SM.
template <class T, int kTok, int kMinBlocks = 0, bool kLean = false, bool kHalves = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_feature_major_kernel(Mvue24Args args) {
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
    mvue_fm_chunk<T, kTok, kLean, kHalves>(args, f, t0, vec, w);
  }
}

/// One 16-byte streaming load that the compiler can neither merge with another load of the same
/// address nor move (volatile asm): the full-rule path of variant 9 re-reads its chunk with it, so
/// that the fast path's words need not stay live for it.
__device__ __forceinline__ uint4 ldcs_reread(const void* p) {
  uint4 q;
  asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w) : "l"(p));
  return q;
}

/// The same for one 4-byte word (the full-rule path of variant 12).
__device__ __forceinline__ std::uint32_t ldcs_reread32(const void* p) {
  std::uint32_t r;
  asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(r) : "l"(p));
  return r;
}

/// Variant 9 (16-bit feature-major, tokens % 32 == 0; docs/PERF-train.md "Session 6b"): variant 6
/// (32-token chunks, the ALU-lean fast path, one fast-path check per chunk) with short live
/// ranges, so that bf16 fits 64 registers (4 CTAs of 256 = 32 warps per SM) without spilling:
/// - the Philox words of groups 4h .. 4h + 3 are made just before them (one call per 16 tokens),
///   each word pair dies with its window pair;
/// - the rare full rule (some group not on the fast path) re-reads the chunk (ldcs_reread) and
///   re-makes its Philox words per 16-token half instead of keeping the 16 words and 8 Philox
///   words of the fast path live until its validity is known;
/// - guarded chunks (tails, unaligned) run the full rule directly (element loads per half; the
///   fast path's result was discarded there anyway).
/// Outputs identical to variant 6 and the host rule.
/// kStaged (variant 11, docs/PERF-train.md "Session 7"): the chunk's four 16-byte loads go to
/// the thread's own slots in shared memory by cp.async, then each 16-token half reads its 8 words
/// from there right before its groups (LDS.128; the rare full rule reads them again instead of
/// re-loading from global). Why: session 6b read variant 10's SASS: ptxas sinks two of the four
/// register loads (bf16: the 3rd after ~150 instructions, f16 after ~45) to fit 48 registers, so a
/// bf16 warp keeps about half a chunk in flight; asm-pinned register loads are sunk the same way
/// (ptxas schedules the PTX loads, checked in the SASS). cp.async needs no destination register,
/// so all 64 bytes are in flight from the start whatever the register budget, and the words
/// live only from their LDS to their group pair. Cost: 16 KB of shared memory per CTA, 4 LDGSTS +
/// 4 LDS.128 instead of 4 LDG per thread. Measured (session 7, H200): 0.77x of variant 10 for
/// bf16, 0.71x for f16 (48 registers, 40 warps either way): the LDGSTS path loses to register
/// loads here, so it stays opt-in.
template <class T, int kMinBlocks = 0, bool kStaged = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_feature_major_jit_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  static_assert(sizeof(Raw) == 2, "variant 9: 16-bit types");
  constexpr bool kBf16 = kIsBf16<T>;
  const std::int64_t T_ = args.tokens, N = args.features;
  const std::int64_t t0 = (std::int64_t(blockIdx.x) * Mvue24Traits::kRowThreads + threadIdx.x) * 32;
  if (t0 >= T_) return;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  const bool vec = kMvueProbe || (args.aligned && t0 + 32 <= T_);
  constexpr int kT = Mvue24Traits::kThreads;
  __shared__ uint4 stage[kStaged ? 4 * kT : 1];  // kStaged: slot v * 256 + tid (conflict-free LDS.128)
  const int tid = threadIdx.y * Mvue24Traits::kRowThreads + threadIdx.x;
  for (std::int64_t f = std::int64_t(blockIdx.y) * Mvue24Traits::kRowFeatures + threadIdx.y; f < N;
       f += std::int64_t(gridDim.y) * Mvue24Traits::kRowFeatures) {
    std::uint32_t pair[8], nibs = 0;
    bool ok = false;
    if (vec) {
      std::uint32_t w[16];
      const uint4* src = reinterpret_cast<const uint4*>(g + f * T_ + t0);
      if constexpr (kStaged) {
#pragma unroll
        for (int v = 0; v < 4; ++v) cp_async16(&stage[v * kT + tid], src + v);
        cp_async_commit();
        cp_async_wait<0>();  // the thread's own slots: no barrier
      } else {
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const uint4 q = __ldcs(src + v);
          w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
        }
      }
      ok = true;
      float nibf[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (kStaged) {
#pragma unroll
          for (int v = 2 * h; v < 2 * h + 2; ++v) {
            const uint4 q = stage[v * kT + tid];
            w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
          }
        }
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
            const uint4 q = kStaged ? stage[(2 * h + v) * kT + tid] : ldcs_reread(src + 8 * v);
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

/// Persistent feature-major kernel (variant 2): CTA tiles of 64 chunks x 4 features walked with a
/// grid stride (TileWalk: x = chunk group, y = feature group); each thread copies its next
/// chunk (kTok tokens, 16-byte cp.async) into its own shared-memory slot before computing the
/// current one, so every thread keeps one chunk of loads in flight while it computes.
/// Dynamic shared memory: 2 buffers x kWords / 4 x 256 uint4.
template <class T, int kTok>
__global__ void __launch_bounds__(Mvue24Traits::kThreads) mvue24_feature_major_pf_kernel(Mvue24Args args, TileWalk walk) {
  using Raw = typename Elem<T>::Raw;
  constexpr bool k16 = sizeof(Raw) == 2;
  constexpr int kWords = k16 ? kTok / 2 : kTok, kVec = kWords / 4, kT = Mvue24Traits::kThreads;
  extern __shared__ uint4 pf_fm[];
  const int tid = threadIdx.y * Mvue24Traits::kRowThreads + threadIdx.x;
  const std::int64_t T_ = args.tokens, N = args.features;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  auto chunk_of = [&](const TilePos& p, std::int64_t& f, std::int64_t& t0) {
    t0 = (std::int64_t(p.x) * Mvue24Traits::kRowThreads + threadIdx.x) * kTok;
    f = std::int64_t(p.y) * Mvue24Traits::kRowFeatures + threadIdx.y;
  };
  auto issue = [&](const TilePos& p, int buf) {
    if (!p.valid(walk)) return;
    std::int64_t f, t0;
    chunk_of(p, f, t0);
    if (!(args.aligned && t0 + kTok <= T_ && f < N)) return;
    const uint4* src = reinterpret_cast<const uint4*>(g + f * T_ + t0);
#pragma unroll
    for (int v = 0; v < kVec; ++v) cp_async16(&pf_fm[(buf * kVec + v) * kT + tid], src + v);
  };
  TilePos pos = TilePos::at(walk, blockIdx.x);
  issue(pos, 0);
  cp_async_commit();
  int buf = 0;
  while (pos.valid(walk)) {
    TilePos next = pos;
    next.advance(walk);
    issue(next, buf ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    std::int64_t f, t0;
    chunk_of(pos, f, t0);
    if (t0 < T_ && f < N) {
      const bool vec = args.aligned && t0 + kTok <= T_;
      std::uint32_t w[kWords];
      if (vec) {
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
          const uint4 q = pf_fm[(buf * kVec + v) * kT + tid];
          w[4 * v] = q.x, w[4 * v + 1] = q.y, w[4 * v + 2] = q.z, w[4 * v + 3] = q.w;
        }
      } else {
        mvue_fm_load_guarded<T, kTok>(args, f, t0, w);
      }
      mvue_fm_chunk<T, kTok>(args, f, t0, vec, w);
    }
    pos = next;
    buf ^= 1;
  }
  cp_async_wait<0>();
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
/// kRows_ / kSwShift: the 64-row tile of variants 12 / 13 (a warp deposits rows 2 fp + k, so the
/// swizzle comes from row / 2 there: chunk ^ (row / 2) % 8, again conflict-free).
template <class Raw, int kRows_ = 128, int kSwShift = 2>
struct Tile24 {
  static constexpr int kRows = kRows_, kWindows = 32;
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
      if (indices && (2 * kRows >= Mvue24Traits::kThreads || tid < 2 * kRows)) {  // 64 rows: half the threads
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

template <class T, int kMinBlocks = 0, bool kLean = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_token_major_kernel(Mvue24Args args) {
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

/// Variants 15 / 16 (16-bit token-major; docs/PERF-train.md "Session 7b"): variant 6 (variant 1's
/// geometry: 128 x 128 tiles, threads of 16 tokens x 4 features, 8-byte loads, the lean fast path)
/// with the short live ranges of variant 9: per feature its Philox words are made just before it,
/// and the rare full rule (some group off the fast path) re-makes them and re-reads its 16 token
/// words from global memory (ldcs_reread32) instead of keeping the fast path's words, Philox words
/// and the consumed input words live for it. 15: no register cap; 16: __launch_bounds__(256, 4)
/// (64 registers, 32 warps per SM). kLines (variant 17): 16 under variant 5's geometry (256-token x
/// 64-feature tiles, TileW64: warp loads of 2 whole 128-byte lines, whole-line value stores and
/// whole-sector index stores). Edge tiles / unaligned shapes: guarded loads, the full rule from x,
/// the guarded write-out. Outputs identical to variant 1 and the host rule.
template <class Raw>
struct TileW64;  // below (variant 3)

///
/// kAhead (variants 18-20, docs/PERF-train.md "Session 7c"): the Philox words of the first kAhead
/// features are made between the loads' issue and their first use. Program order alone does not
/// do it (in 15-17 ptxas places the first PRMT of the loaded words before feature 0's Philox
/// chain, so the warp waits on its loads with that load-independent chain queued behind), so the
/// PRMT selectors of the fast path carry a data dependency on the last Philox word: sel | (word &
/// z) with z an opaque zero (the kernel runs for token-major calls only: z = token_major ? 0 : ~0),
/// which makes every consumer of the loaded words wait for the chain. One LOP3 per selector.
///
/// kOpt (variants 21-24, docs/PERF-train.md "Session 8 (MVUE)"), bits: kMvueTmFmaCvt: the bf16
/// conversions on the FMA pipe (halves16_f<true, true>: IMAD.WIDE.U32 + IMAD.U32 instead of
/// IMAD.U32 + LOP3; measured 0.975-0.99x); kMvueTmOneTest: the fast path's validity per group in
/// one FSETP (mvue_pick_lean<true>: the level made as fma(S, 0, c)) instead of 2 FSETP + PLOP3
/// (spills 16 B here: 0.92-0.96x); kMvueTmTokenX: blockIdx.x walks the token tiles, blockIdx.y
/// the feature tiles (the launcher's grid is transposed to match; +0.3-0.6 %).
constexpr int kMvueTmFmaCvt = 1, kMvueTmOneTest = 2, kMvueTmTokenX = 4;
template <class T, int kMinBlocks = 0, bool kLines = false, int kAhead = 0, int kOpt = 0>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_token_major_jit_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  static_assert(sizeof(Raw) == 2, "variants 15 - 17: 16-bit types");
  constexpr int kTileT = kLines ? 256 : 128, kTileF = kLines ? 64 : 128, kFp = kTileF / 4;
  using Tile = std::conditional_t<kLines, TileW64<Raw>, Tile24<Raw>>;
  __shared__ Tile tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % kFp, tg = tid / kFp;
  constexpr bool kTokenX = (kOpt & kMvueTmTokenX) != 0, kFmaCvt = (kOpt & kMvueTmFmaCvt) != 0,
                 kOneTest = (kOpt & kMvueTmOneTest) != 0;
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
  static_assert(kAhead >= 0 && kAhead <= 4);
  std::uint32_t rnd_ahead[kAhead > 0 ? kAhead : 1][4];
  std::uint32_t sel_fast[2] = {0x5410u, 0x7632u};  // the fast path's PRMT selectors (feature k: sel_fast[k % 2])
  if constexpr (kAhead > 0) {
    if (fast) {
#pragma unroll
      for (int a = 0; a < kAhead; ++a) mvue_words<1>(args.keys, std::uint64_t(f0 + a), std::uint64_t(t0 / 16), rnd_ahead[a]);
      const std::uint32_t z = args.token_major ? 0u : ~0u;  // 0, unknown to the compiler
      std::uint32_t dep = rnd_ahead[kAhead - 1][3];
      if constexpr (kAhead > 1) dep |= rnd_ahead[0][3];
      sel_fast[0] |= dep & z, sel_fast[1] |= dep & z;
    }
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
        ok &= mvue_window16x2_lean<kIsBf16<T>, kFmaCvt, kOneTest>(w[2 * g2], w[2 * g2 + 1], rnd[g2], w[2 * g2 + 2],
                                                                  w[2 * g2 + 3], rnd[g2 + 1], pair[g2], pair[g2 + 1], nibf,
                                                                  g2, g2 + 1);
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
  if constexpr (kLines) {
    const bool idx16 = T_ % 128 == 0 && reinterpret_cast<std::uintptr_t>(args.indices) % 16 == 0;
    tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * kTileF, t_tile * (kTileT / 4), N, windows, fast, idx16);
  } else {
    tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * kTileF, t_tile * (kTileT / 4), N, windows, fast);
  }
}

/// Variants 12 / 13 (16-bit token-major; docs/PERF-train.md "Session 7"): variant 6 (the lean
/// fast path) with a thread tile of 16 tokens x 2 features instead of 16 x 4. Variant 1's thread
/// holds 32 input words by layout (16 token rows x 8 bytes) and the fast path's words, Philox
/// words and pairs on top: bf16 80 registers -> 24 warps per SM, and the 64-register caps
/// (variants 4 / 5) spill. Here a thread loads 16 x 4 bytes (a warp: 16 whole 128-byte lines,
/// one per token row), i.e. 16 words; per feature the 8 words of its column are one PRMT each,
/// its Philox call is made right before it, and its pairs go to shared memory at once, so the
/// thread needs about half the registers: 40 warps at 48 (variant 13: __launch_bounds__(256, 5)).
/// Bytes in flight per warp halve (2 KB instead of 4 KB) and the warps double; the CTA tile is
/// 128 tokens x 64 features (Tile24 with 64 rows: 128-byte value rows, whole lines, 16-byte
/// index rows as in variant 1). Edge tiles and unaligned shapes take guarded element loads and
/// the guarded write-out. Outputs identical to variant 1 and the host rule.
/// Measured (session 7, H200, 16384 x 5120 / 6400): 0.96-0.98x of variant 1 (bf16), 0.88-0.90x of
/// variant 5 (f16): the +18 % instructions per element (Philox, addresses, deposits and the
/// write-out serve 32 elements instead of 64) and half-size warp loads cost more than 40 warps
/// instead of 24 buy; opt-in.
template <class T>
__device__ __forceinline__ void mvue_tm2_load_guarded(const Mvue24Args& args, std::int64_t f0, std::int64_t t0,
                                                      std::uint32_t (&x)[16]) {
  using Raw = typename Elem<T>::Raw;
  const std::int64_t T_ = args.tokens, N = args.features;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
#pragma unroll
  for (int t = 0; t < 16; ++t) {
    const std::uint32_t lo = (t0 + t < T_ && f0 < N) ? g[(t0 + t) * N + f0] : 0u;
    const std::uint32_t hi = (t0 + t < T_ && f0 + 1 < N) ? g[(t0 + t) * N + f0 + 1] : 0u;
    x[t] = lo | (hi << 16);
  }
}

/// kStaged (variant 13): the 16 token words go to the thread's slots in shared memory by cp.async
/// (4 bytes each: a warp still fills one whole line per instruction) and each feature reads them
/// there (LDS.32, conflict-free), as variant 11 does for feature-major: bytes in flight do not
/// depend on where ptxas places register loads.
template <class T, int kMinBlocks = 0, bool kStaged = false>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, kMinBlocks) mvue24_token_major_pair_kernel(Mvue24Args args) {
  using Raw = typename Elem<T>::Raw;
  static_assert(sizeof(Raw) == 2, "variants 12 / 13: 16-bit types");
  constexpr int kTileT = 128, kTileF = 64;
  using Tile = Tile24<Raw, kTileF, 1>;
  __shared__ Tile tile;
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % 32, tg = tid / 32;
  const std::int64_t f_tile = blockIdx.x, t_tile = blockIdx.y;
  const std::int64_t f0 = f_tile * kTileF + 2 * fp, t0 = t_tile * kTileT + 16 * tg;
  const bool fast = kMvueProbe || (args.aligned && (f_tile + 1) * kTileF <= N && (t_tile + 1) * kTileT <= T_);
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  constexpr int kT = Mvue24Traits::kThreads;
  __shared__ std::uint32_t stage[kStaged ? 16 * kT : 1];  // kStaged: slot t * 256 + tid
  std::uint32_t x[16];  // x[t]: features f0, f0 + 1 of token t0 + t
  if (fast) {
    if constexpr (kStaged) {
#pragma unroll
      for (int t = 0; t < 16; ++t) cp_async4(&stage[t * kT + tid], g + (t0 + t) * N + f0);
      cp_async_commit();
      cp_async_wait<0>();  // the thread's own slots: no barrier
    } else {
#pragma unroll
      for (int t = 0; t < 16; ++t) x[t] = __ldcs(reinterpret_cast<const unsigned int*>(g + (t0 + t) * N + f0));
    }
  } else {
    mvue_tm2_load_guarded<T>(args, f0, t0, x);
  }
  // per feature: the fast path (its Philox words made just before it); where it fails (rare) or
  // on edge tiles, the full rule with the words and Philox words made again (re-read from shared
  // memory / global, x for edge tiles), so that nothing of the fast path stays live for it (the
  // fallback kept in mvue_row16 holds w and rnd: 64 registers instead of 40)
#pragma unroll
  for (int k = 0; k < 2; ++k) {  // feature f0 + k: the half k of every token word
    const std::uint32_t sel = k ? 0x7632u : 0x5410u;
    std::uint32_t pair[4], nibs = 0;
    bool ok = false;
    if (fast) {
      std::uint32_t rnd[4], w[8];
      mvue_words<1>(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), rnd);  // t0 % 16 == 0
#pragma unroll
      for (int i = 0; i < 8; ++i)
        w[i] = kStaged ? prmt(stage[2 * i * kT + tid], stage[(2 * i + 1) * kT + tid], sel) : prmt(x[2 * i], x[2 * i + 1], sel);
      float nibf = kMvueLeanNib0;
      ok = true;
#pragma unroll
      for (int g2 = 0; g2 < 4; g2 += 2)
        ok &= mvue_window16x2_lean<kIsBf16<T>>(w[2 * g2], w[2 * g2 + 1], rnd[g2], w[2 * g2 + 2], w[2 * g2 + 3], rnd[g2 + 1],
                                               pair[g2], pair[g2 + 1], nibf, g2, g2 + 1);
      nibs = f32_bits(nibf) & 0xffffu;  // 0x4B00 above the nibbles
      if constexpr (kMvueProbe) nibs ^= ok ? 0u : 1u;  // keeps the validity tests live in the probe
    }
    if (!ok && !kMvueProbe) {
      std::uint32_t rnd[4];
      mvue_words<1>(args.keys, std::uint64_t(f0 + k), std::uint64_t(t0 / 16), rnd);
      nibs = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        std::uint32_t xa, xb, xc, xd, nib;
        if (fast && kStaged) {
          xa = stage[(4 * q) * kT + tid], xb = stage[(4 * q + 1) * kT + tid];
          xc = stage[(4 * q + 2) * kT + tid], xd = stage[(4 * q + 3) * kT + tid];
        } else if (fast) {
          const Raw* src = g + (t0 + 4 * q) * N + f0;
          xa = ldcs_reread32(src), xb = ldcs_reread32(src + N), xc = ldcs_reread32(src + 2 * N), xd = ldcs_reread32(src + 3 * N);
        } else {
          xa = x[4 * q], xb = x[4 * q + 1], xc = x[4 * q + 2], xd = x[4 * q + 3];
        }
        mvue_window16_full<kIsBf16<T>>(prmt(xa, xb, sel), prmt(xc, xd, sel), rnd[q], pair[q], nib);
        nibs |= nib << (4 * q);
      }
    }
    const int row = 2 * fp + k;
    tile.vals[Tile::slot(row, tg)] = make_uint4(pair[0], pair[1], pair[2], pair[3]);
    tile.nib[row * Tile::kNibPitch + tg] = std::uint16_t(nibs);
  }
  __syncthreads();
  tile.write(static_cast<Raw*>(args.values), args.indices, f_tile * kTileF, t_tile * (kTileT / 4), N, windows, fast);
}

/// Persistent token-major kernel (variant 2, 16-bit types): 128 x 128 tiles walked with a grid
/// stride (TileWalk: x = feature tile, y = token tile); each thread copies its 16 x 8 bytes of
/// the next interior tile (cp.async) into its own shared-memory slots before computing the
/// current tile, so the next tile's loads are in flight during the compute and the write-out.
/// Dynamic shared memory: 2 buffers x 16 x 256 uint2 (64 KB) + the static output tile: 2 CTAs
/// (16 warps) per SM. Two barriers per tile (tile filled; tile written out).
template <class T>
__global__ void __launch_bounds__(Mvue24Traits::kThreads, 2) mvue24_token_major_pf_kernel(Mvue24Args args, TileWalk walk) {
  using Raw = typename Elem<T>::Raw;
  using Traits = Mvue24Traits;
  static_assert(sizeof(Raw) == 2, "16-bit types only");
  constexpr int kT = Traits::kThreads;
  __shared__ Tile24<Raw> tile;
  extern __shared__ uint2 pf_tm[];
  const std::int64_t T_ = args.tokens, N = args.features, windows = (T_ + 3) / 4;
  const int tid = threadIdx.x, fp = tid % 32, tg = tid / 32;
  const Raw* __restrict__ g = static_cast<const Raw*>(args.g);
  auto fast_tile = [&](const TilePos& p) {
    return args.aligned && (std::int64_t(p.x) + 1) * Traits::kTileFeatures <= N && (std::int64_t(p.y) + 1) * Traits::kTileTokens <= T_;
  };
  auto issue = [&](const TilePos& p, int buf) {
    if (!p.valid(walk) || !fast_tile(p)) return;
    const std::int64_t f0 = std::int64_t(p.x) * Traits::kTileFeatures + 4 * fp, t0 = std::int64_t(p.y) * Traits::kTileTokens + 16 * tg;
    const Raw* src = g + t0 * N + f0;
#pragma unroll
    for (int t = 0; t < 16; ++t) cp_async8(&pf_tm[(buf * 16 + t) * kT + tid], src + t * N);
  };
  TilePos pos = TilePos::at(walk, blockIdx.x);
  issue(pos, 0);
  cp_async_commit();
  int buf = 0;
  while (pos.valid(walk)) {
    TilePos next = pos;
    next.advance(walk);
    issue(next, buf ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    const bool fast = fast_tile(pos);
    const std::int64_t f0 = std::int64_t(pos.x) * Traits::kTileFeatures + 4 * fp, t0 = std::int64_t(pos.y) * Traits::kTileTokens + 16 * tg;
    std::uint32_t x[16][2];
    if (fast) {
#pragma unroll
      for (int t = 0; t < 16; ++t) {
        const uint2 p = pf_tm[(buf * 16 + t) * kT + tid];
        x[t][0] = p.x, x[t][1] = p.y;
      }
    } else {
      mvue_tm_load_guarded<T>(args, f0, t0, x);
    }
    mvue_tm_compute<T>(args, f0, t0, fp, tg, x, tile);
    __syncthreads();
    tile.write(static_cast<Raw*>(args.values), args.indices, std::int64_t(pos.x) * Traits::kTileFeatures,
               std::int64_t(pos.y) * (Traits::kTileTokens / 4), N, windows, fast);
    __syncthreads();  // the tile is free for the next deposits
    pos = next;
    buf ^= 1;
  }
  cp_async_wait<0>();
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

/// The resident 256-thread CTAs per SM that the occupancy variants (Mvue24Args::variant 4 =
/// variant 1, 5 = variant 3, under __launch_bounds__(256, this)) ask for: 4 (<= 64 registers,
/// 32 warps) for 16-bit types and f32 feature-major; f32 token-major keeps 2 (its 104 registers
/// spill ~700 B at 64). docs/PERF-train.md "Session 4".
template <class T, bool kTokenMajor>
constexpr int kMvueOccBlocks = (sizeof(typename Elem<T>::Raw) == 4 && kTokenMajor) ? 2 : 4;

template <class K>
void launch_persistent(K kernel, ResidentCtas& cache, dim3 block, std::size_t smem, std::int64_t nx, std::int64_t ny,
                       const Mvue24Args& a, cudaStream_t s) {
  const std::int64_t grid = cache.grid(kernel, int(block.x * block.y), smem, nx * ny);
  kernel<<<unsigned(grid), block, smem, s>>>(a, make_tile_walk(nx, ny, 1, grid));
}

template <class T>
void launch_mvue24_impl(const Mvue24Args& a, cudaStream_t s) {
  using Traits = Mvue24Traits;
  constexpr bool k16 = sizeof(typename Elem<T>::Raw) == 2;
  constexpr DType kDtype = std::is_same_v<T, float> ? DType::f32 : kIsBf16<T> ? DType::bf16 : DType::f16;
  const int variant = a.variant != 0 ? a.variant : mvue24_default_variant(kDtype, a.token_major, a.tokens, a.features);
  // the one-shot kernels (variants 1, 3, 4, 5), with the occupancy control's padding if asked for
  auto go = [&](auto kernel, dim3 grid, dim3 block) {
    const std::size_t smem = occupancy_cap_smem(kernel, int(block.x * block.y), a.max_ctas_per_sm);
    kernel<<<grid, block, smem, s>>>(a);
  };
  const dim3 fm_block(Traits::kRowThreads, Traits::kRowFeatures);
  const unsigned fy = unsigned(std::min<std::int64_t>((a.features + Traits::kRowFeatures - 1) / Traits::kRowFeatures, 65535));
  // 7: variant 5 with the ALU-lean fast path (16-bit types; f32 runs variant 5)
  if (variant == 3 || variant == 5 || variant == 7) {  // whole-line stores; 5, 7: the register cap of kMvueOccBlocks
    const bool occ = variant != 3, lean = k16 && variant == 7;
    constexpr int kOccTm = kMvueOccBlocks<T, true>, kOccFm = kMvueOccBlocks<T, false>;
    if (a.token_major) {
      const dim3 grid(unsigned((a.features + 63) / 64), unsigned((a.tokens + 255) / 256));
      if (lean) go(mvue24_token_major_lines_kernel<T, kOccTm, k16>, grid, dim3(Traits::kThreads));
      else if (occ) go(mvue24_token_major_lines_kernel<T, kOccTm>, grid, dim3(Traits::kThreads));
      else go(mvue24_token_major_lines_kernel<T>, grid, dim3(Traits::kThreads));
    } else {
      const dim3 grid(unsigned(((a.tokens + 15) / 16 + 127) / 128), fy);
      if (lean) go(mvue24_feature_major_lines_kernel<T, kOccFm, k16>, grid, fm_block);
      else if (occ) go(mvue24_feature_major_lines_kernel<T, kOccFm>, grid, fm_block);
      else go(mvue24_feature_major_lines_kernel<T>, grid, fm_block);
    }
    SPARSENM_CUDA_CHECK_LAUNCH("mvue24_lines_kernel");
    return;
  }
  // 1: one chunk / tile per thread / CTA; 4: under the register cap of kMvueOccBlocks; 6: variant
  // 1 with the ALU-lean fast path (16-bit types; f32 runs variant 1); 8: variant 6 with the
  // feature-major 32-token chunk in two halves (16-bit, tokens % 32 == 0; token-major and other
  // feature-major calls run variant 6, f32 variant 1); 9: variant 6 with short live ranges
  // (mvue24_feature_major_jit_kernel; the same fallbacks as 8); 10: 9 under a 5-CTA register cap
  // (48 registers, 40 warps per SM; bf16 does not spill, f16 is at 48 anyway); 11: 10 with the
  // chunk's four loads issued together (ldcs_chunk32; same fallbacks as 8); 12: token-major
  // 16-token x 2-feature threads (mvue24_token_major_pair_kernel; feature-major runs variant 6,
  // f32 variant 1); 13: 12 under a 5-CTA register cap; 15 / 16: token-major variant 6 with short
  // live ranges (mvue24_token_major_jit_kernel; 16 under a 4-CTA cap, 17 = 16 with variant 5's
  // 256 x 64 tiles; 18 / 19 / 20: 17 / 17 / 15 with the Philox words of the first 1 / 2 / 1
  // features ahead of the loads' first use; feature-major runs variant 6, f32 variant 1)
  if (variant != 2) {
    const bool occ = variant == 4, lean = k16 && (variant == 6 || variant >= 8);
    if constexpr (k16) {
      if ((variant >= 8 && variant <= 11) && !a.token_major && a.tokens % 32 == 0) {
        const dim3 grid(unsigned((a.tokens / 32 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
        if (variant == 8) go(mvue24_feature_major_kernel<T, 32, 0, true, true>, grid, fm_block);
        else if (variant == 9) go(mvue24_feature_major_jit_kernel<T>, grid, fm_block);
        else if (variant == 10) go(mvue24_feature_major_jit_kernel<T, 5>, grid, fm_block);
        else go(mvue24_feature_major_jit_kernel<T, 0, true>, grid, fm_block);
        SPARSENM_CUDA_CHECK_LAUNCH("mvue24_kernel");
        return;
      }
      if (variant >= 15 && variant <= 24 && a.token_major) {  // Session 7b: variant 6 with short live ranges
        const dim3 grid(unsigned((a.features + Traits::kTileFeatures - 1) / Traits::kTileFeatures),
                        unsigned((a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens));
        const dim3 grid_lines(unsigned((a.features + 63) / 64), unsigned((a.tokens + 255) / 256));
        if (variant == 15) go(mvue24_token_major_jit_kernel<T>, grid, dim3(Traits::kThreads));
        else if (variant == 16) go(mvue24_token_major_jit_kernel<T, 4>, grid, dim3(Traits::kThreads));
        else if (variant == 17) go(mvue24_token_major_jit_kernel<T, 4, true>, grid_lines, dim3(Traits::kThreads));
        // Session 7c: Philox words of the first features between the loads and their first use
        else if (variant == 18) go(mvue24_token_major_jit_kernel<T, 4, true, 1>, grid_lines, dim3(Traits::kThreads));
        else if (variant == 19) go(mvue24_token_major_jit_kernel<T, 4, true, 2>, grid_lines, dim3(Traits::kThreads));
        else if (variant == 20) go(mvue24_token_major_jit_kernel<T, 0, false, 1>, grid, dim3(Traits::kThreads));
        // Session 8: 18 with the bf16 conversions on the FMA pipe (21), + the one-FSETP validity (22),
        // 21 / 18 with the token tiles along blockIdx.x (23 / 24; 21 / 18 where the feature tiles
        // exceed gridDim.y). f16 has no bf16 conversions: its 21 is 18's code, its 23 is 24's.
        else if (variant == 21) go(mvue24_token_major_jit_kernel<T, 4, true, 1, kMvueTmFmaCvt>, grid_lines, dim3(Traits::kThreads));
        else if (variant == 22)
          go(mvue24_token_major_jit_kernel<T, 4, true, 1, kMvueTmFmaCvt | kMvueTmOneTest>, grid_lines, dim3(Traits::kThreads));
        else if (variant == 23 && grid_lines.x > 65535u)
          go(mvue24_token_major_jit_kernel<T, 4, true, 1, kMvueTmFmaCvt>, grid_lines, dim3(Traits::kThreads));
        else if (variant == 23)
          go(mvue24_token_major_jit_kernel<T, 4, true, 1, kMvueTmFmaCvt | kMvueTmTokenX>, dim3(grid_lines.y, grid_lines.x),
             dim3(Traits::kThreads));
        else if (grid_lines.x > 65535u)
          go(mvue24_token_major_jit_kernel<T, 4, true, 1>, grid_lines, dim3(Traits::kThreads));
        else
          go(mvue24_token_major_jit_kernel<T, 4, true, 1, kMvueTmTokenX>, dim3(grid_lines.y, grid_lines.x), dim3(Traits::kThreads));
        SPARSENM_CUDA_CHECK_LAUNCH("mvue24_token_major_jit_kernel");
        return;
      }
      if (variant >= 12 && variant <= 14 && a.token_major) {
        const dim3 grid(unsigned((a.features + 63) / 64), unsigned((a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens));
        if (variant == 12) go(mvue24_token_major_pair_kernel<T>, grid, dim3(Traits::kThreads));
        else if (variant == 13) go(mvue24_token_major_pair_kernel<T, 0, true>, grid, dim3(Traits::kThreads));
        else go(mvue24_token_major_pair_kernel<T, 6, true>, grid, dim3(Traits::kThreads));
        SPARSENM_CUDA_CHECK_LAUNCH("mvue24_token_major_pair_kernel");
        return;
      }
    }
    if (a.token_major) {
      const dim3 grid(unsigned((a.features + Traits::kTileFeatures - 1) / Traits::kTileFeatures),
                      unsigned((a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens));
      if (lean) go(mvue24_token_major_kernel<T, 0, k16>, grid, dim3(Traits::kThreads));
      else if (occ) go(mvue24_token_major_kernel<T, kMvueOccBlocks<T, true>>, grid, dim3(Traits::kThreads));
      else go(mvue24_token_major_kernel<T>, grid, dim3(Traits::kThreads));
    } else if (a.tokens % 32 == 0) {
      const dim3 grid(unsigned((a.tokens / 32 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
      if (lean) go(mvue24_feature_major_kernel<T, 32, 0, k16>, grid, fm_block);
      else if (occ) go(mvue24_feature_major_kernel<T, 32, kMvueOccBlocks<T, false>>, grid, fm_block);
      else go(mvue24_feature_major_kernel<T, 32>, grid, fm_block);
    } else {
      const dim3 grid(unsigned(((a.tokens + 15) / 16 + Traits::kRowThreads - 1) / Traits::kRowThreads), fy);
      if (lean) go(mvue24_feature_major_kernel<T, 16, 0, k16>, grid, fm_block);
      else if (occ) go(mvue24_feature_major_kernel<T, 16, kMvueOccBlocks<T, false>>, grid, fm_block);
      else go(mvue24_feature_major_kernel<T, 16>, grid, fm_block);
    }
    SPARSENM_CUDA_CHECK_LAUNCH("mvue24_kernel");
    return;
  }
  // variant 2: persistent, prefetching (token-major: 16-bit types; f32 runs variant 1 above)
  if (a.token_major) {
    const std::int64_t nx = (a.features + Traits::kTileFeatures - 1) / Traits::kTileFeatures,
                       ny = (a.tokens + Traits::kTileTokens - 1) / Traits::kTileTokens;
    if constexpr (k16) {
      static ResidentCtas cache;
      launch_persistent(mvue24_token_major_pf_kernel<T>, cache, dim3(Traits::kThreads), 2 * 16 * Traits::kThreads * sizeof(uint2),
                        nx, ny, a, s);
      SPARSENM_CUDA_CHECK_LAUNCH("mvue24_token_major_pf_kernel");
      return;
    } else {
      go(mvue24_token_major_kernel<T>, dim3(unsigned(nx), unsigned(ny)), dim3(Traits::kThreads));
    }
  } else {
    const std::int64_t ny = (a.features + Traits::kRowFeatures - 1) / Traits::kRowFeatures;
    if (a.tokens % 32 == 0) {
      static ResidentCtas cache;
      launch_persistent(mvue24_feature_major_pf_kernel<T, 32>, cache, fm_block, 2 * (k16 ? 4 : 8) * Traits::kThreads * sizeof(uint4),
                        (a.tokens / 32 + Traits::kRowThreads - 1) / Traits::kRowThreads, ny, a, s);
    } else {
      static ResidentCtas cache;
      launch_persistent(mvue24_feature_major_pf_kernel<T, 16>, cache, fm_block, 2 * (k16 ? 2 : 4) * Traits::kThreads * sizeof(uint4),
                        ((a.tokens + 15) / 16 + Traits::kRowThreads - 1) / Traits::kRowThreads, ny, a, s);
    }
  }
  SPARSENM_CUDA_CHECK_LAUNCH("mvue24_kernel");
}

}  // namespace sparsenm::train::detail

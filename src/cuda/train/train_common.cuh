// sparsenm — shared pieces of the training kernels (src/cuda/train): element traits for the
// three weight dtypes, raw 16-byte vector access, and the launch-argument structs.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/train/philox.hpp"
#include "sparsenm/train.hpp"

namespace sparsenm::train::detail {

/// Element traits: raw storage word, conversions, and how many elements one 16-byte access holds.
template <class T> struct Elem;
template <> struct Elem<__half> {
  using Raw = std::uint16_t;
  static constexpr int kPer16B = 8;
  static __device__ __forceinline__ float to_float(Raw r) { return __half2float(__ushort_as_half(r)); }
  static __device__ __forceinline__ Raw from_float(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <> struct Elem<__nv_bfloat16> {
  using Raw = std::uint16_t;
  static constexpr int kPer16B = 8;
  static __device__ __forceinline__ float to_float(Raw r) { return __uint_as_float(std::uint32_t(r) << 16); }
  static __device__ __forceinline__ Raw from_float(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
template <> struct Elem<float> {
  using Raw = std::uint32_t;
  static constexpr int kPer16B = 4;
  static __device__ __forceinline__ float to_float(Raw r) { return __uint_as_float(r); }
  static __device__ __forceinline__ Raw from_float(float f) { return __float_as_uint(f); }
};

/// Loads N raw elements (N * sizeof(Raw) a multiple of 16) with 16-byte loads, streaming (.cs:
/// every byte is used once).
template <class Raw, int N>
__device__ __forceinline__ void load_vec(const Raw* __restrict__ p, Raw (&out)[N]) {
  static_assert((N * sizeof(Raw)) % 16 == 0);
  constexpr int kVec = N * sizeof(Raw) / 16;
#pragma unroll
  for (int v = 0; v < kVec; ++v) {
    uint4 q = __ldcs(reinterpret_cast<const uint4*>(p) + v);
    std::uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (sizeof(Raw) == 2) {
        out[v * 8 + 2 * i] = Raw(w[i] & 0xffffu);
        out[v * 8 + 2 * i + 1] = Raw(w[i] >> 16);
      } else {
        out[v * 4 + i] = Raw(w[i]);
      }
    }
  }
}

/// Stores N raw elements (N * sizeof(Raw) in {8, 16, 32, ...}) with the widest aligned stores.
template <class Raw, int N>
__device__ __forceinline__ void store_vec(Raw* __restrict__ p, const Raw (&in)[N]) {
  constexpr int kBytes = N * sizeof(Raw);
  std::uint32_t w[kBytes / 4];
#pragma unroll
  for (int i = 0; i < kBytes / 4; ++i) {
    if constexpr (sizeof(Raw) == 2) w[i] = std::uint32_t(in[2 * i]) | (std::uint32_t(in[2 * i + 1]) << 16);
    else w[i] = in[i];
  }
  if constexpr (kBytes % 16 == 0) {
#pragma unroll
    for (int v = 0; v < kBytes / 16; ++v)
      __stcs(reinterpret_cast<uint4*>(p) + v, make_uint4(w[4 * v], w[4 * v + 1], w[4 * v + 2], w[4 * v + 3]));
  } else {
    static_assert(kBytes == 8);
    __stcs(reinterpret_cast<uint2*>(p), make_uint2(w[0], w[1]));
  }
}

/// Arguments of the mask search / apply kernels (mask24.cuh).
struct Mask24Args {
  const void* w = nullptr;
  std::int64_t rows = 0, cols = 0;
  const std::uint16_t* mask_in = nullptr;  ///< apply: the given mask
  std::uint16_t* mask_out = nullptr;       ///< search: may be null
  void* w_values = nullptr;
  std::uint8_t* w_indices = nullptr;
  void* wt_values = nullptr;
  std::uint8_t* wt_indices = nullptr;
  std::uint32_t* violations = nullptr;
  std::int64_t batch = 1;  ///< matrices stored back to back (blockIdx.z), each rows x cols
  bool aligned = false;    ///< shapes and pointers allow the vector path on interior tiles
  /// Which kernel (the accepted set: kMask24Variants, variants.hpp; anything else throws
  /// InvalidArgument): 0 = the default for the dtype and mode (mask24_default_variant); 1 = the
  /// session-2 kernel (mask24_s2.cuh, one 4 x 8 region per thread, S(W)^T through shared
  /// memory); 2 = the session-3 kernel (mask24.cuh, one 8 x 8 region per thread, table-driven
  /// compression); 3 = variant 2 walked by a persistent grid with cp.async prefetch; 4 = the
  /// session-2 code over a 256 x 256 footprint per CTA with every store a whole 32-byte sector
  /// (mask24_lines.cuh); 8 = the lean 16-bit search (mask24_lean.cuh: 4 x 8 per thread, 24 warps
  /// per SM, no shared-memory transpose) with every output staged in shared memory and written as
  /// whole 32-byte sectors by 16-byte stores (docs/PERF-train.md "Session 5b"; the batched 16-bit
  /// default where cols % 128 != 0), where mask24_lean_staged_fits holds, else the non-lean
  /// default; 9 = variant 8 over 128-column strips of 8 warps (fewer, fuller L2 write requests;
  /// "Session 5c"; the batched 16-bit default where cols % 128 == 0) where mask24_lean_wide_fits
  /// holds, else variant 8. Variants 5, 6 (occupancy forms of 4), 7 (the lean search storing
  /// straight from registers) and 10 (9 with whole-line S(W)^T rows) measured slower and were
  /// dropped in session 9 (docs/PERF-train.md "Session 9: variants dropped").
  /// Outputs are identical; the bench times the non-default ones in the same run.
  int variant = 0;
  /// Bench / profiling only (variant 4): at most this many CTAs resident per SM, by padding the
  /// launch with dynamic shared memory (the occupancy control of "Session 4"); 0 = no limit;
  /// -k: k CTAs fewer than the kernel's own occupancy.
  int max_ctas_per_sm = 0;
};

/// The measured-faster kernel per dtype size, mode and size (H200; results at 829fe99, 9e387cb and
/// 0a6f0c4, docs/PERF-train.md "Session 3", "Session 3b", "Session 3c"):
/// - variant 4 (256 x 256 footprints, whole-sector stores) for batched refreshes with at least
///   3600 footprints (the smallest measured case that gained): every batched search (16-bit
///   1.05-1.08x, f32 1.02-1.07x) and applies whose rows and columns are multiples of 256
///   (36 x 5120 x 1280: 1.04-1.06x; 48 x 6400 x 1600, 1600 columns: 0.89-0.99x);
/// - for one-matrix 16-bit searches the session-3 kernel (variant 2), and its persistent
///   prefetching form (variant 3) up to 6400 x 1600 elements (1.01-1.11x over variant 2);
/// - the session-2 kernel (variant 1) for the rest (one-matrix applies and f32 searches;
///   variant 4 is 0.6-0.8x on one matrix: fewer CTAs than one wave).
/// - session 5b (6f4b755): the lean search with staged whole-sector stores (variant 8) for those
///   batched 16-bit searches whose rows and columns are multiples of 64 (1.13-1.16x over variant 4
///   on 36 x 5120x1280 and 48 x 6400x1600, f16 and bf16; the launcher runs variant 4 where
///   mask24_lean_staged_fits does not hold).
/// - session 5c (ea31e90): the same over 128-column strips (variant 9) where the columns are
///   multiples of 128 (1.02-1.03x over variant 8 on 36 x 5120x1280, f16 and bf16, same run; the
///   launcher runs variant 8 where mask24_lean_wide_fits does not hold).
inline int mask24_default_variant(std::size_t elem_size, bool search, std::int64_t batch, std::int64_t rows, std::int64_t cols) {
  const std::int64_t footprints = batch * ((rows + 255) / 256) * ((cols + 255) / 256);
  if (batch > 1 && footprints >= 3600 && search && elem_size == 2 && rows % 64 == 0 && cols % 64 == 0) return cols % 128 == 0 ? 9 : 8;
  if (batch > 1 && footprints >= 3600 && (search || (rows % 256 == 0 && cols % 256 == 0))) return 4;
  if (!search || elem_size != 2) return 1;
  return (batch == 1 && rows * cols <= std::int64_t(6400) * 1600) ? 3 : 2;
}

/// Does the lean mask search (mask24_lean.cuh: 64 x 64 tiles) take this call? (16-bit search, every output present, shape and
/// pointers aligned; otherwise the default kernel runs.)
inline bool mask24_lean_fits(const Mask24Args& a, std::size_t elem_size, bool search) {
  return search && elem_size == 2 && a.aligned && a.rows % 64 == 0 && a.cols % 64 == 0 && a.rows > 0 &&
         a.cols > 0 && a.mask_out && a.w_values && a.w_indices && a.wt_values && a.wt_indices;
}

/// Variant 8 also writes S(W) index rows as 8-byte runs: w_indices must be 8-byte aligned (not part
/// of Mask24Args::aligned).
inline bool mask24_lean_staged_fits(const Mask24Args& a, std::size_t elem_size, bool search) {
  return mask24_lean_fits(a, elem_size, search) && reinterpret_cast<std::uintptr_t>(a.w_indices) % 8 == 0;
}

/// Variant 9 (128-column strips of the staged lean search, mask24_lean.cuh kCW = 4): cols % 128
/// == 0 and 16-byte S(W) index rows (w_indices 16-byte aligned); otherwise variant 8 runs.
inline bool mask24_lean_wide_fits(const Mask24Args& a, std::size_t elem_size, bool search) {
  return mask24_lean_staged_fits(a, elem_size, search) && a.cols % 128 == 0 && reinterpret_cast<std::uintptr_t>(a.w_indices) % 16 == 0;
}

struct Mvue24Args {
  const void* g = nullptr;
  std::int64_t tokens = 0, features = 0;
  bool token_major = true;
  std::uint64_t seed = 0;
  PhiloxKeys keys{};  ///< philox_keys(seed)
  void* values = nullptr;
  std::uint8_t* indices = nullptr;
  bool aligned = false;
  /// Which kernels (the accepted set: kMvue24Variants, variants.hpp; anything else throws
  /// InvalidArgument): 0 = the default (mvue24_default_variant); 1 = the session-3 kernels (one
  /// chunk / tile per thread / CTA); 3 = whole-line stores (token-major 256-token x 64-feature
  /// tiles, feature-major 16-token units per lane, mvue24.cuh); 6 = variant 1 with the ALU-lean
  /// 16-bit fast path (mvue_window16x2_lean: counts combined on the FMA pipes, "Session 5"; f32
  /// runs variant 1); 7 = variant 3 under a 4-CTA register cap with the ALU-lean fast path (f32
  /// runs variant 3); 10 = 16-bit feature-major 32-token chunks with short live ranges (Philox
  /// words made just before their groups, the rare full rule re-reads its chunk) under a 5-CTA
  /// register cap (48 registers, 40 warps per SM; "Session 6b"; token-major and tokens % 32 != 0
  /// run variant 6, f32 variant 1); 18 = token-major variant 6 with short live ranges at 4 CTAs
  /// per SM on variant 3's 256 x 64 tiles, the Philox words of feature 0 made between the loads'
  /// issue and their first use ("Session 7b", "Session 7c"); 23 = 18 with the bf16 conversions on
  /// the FMA pipe (IMAD.WIDE instead of LOP3) and the token tiles along blockIdx.x; 24 = 18 with
  /// the token tiles along blockIdx.x ("Session 8 (MVUE)"; for f16, 23 is 24's code; 24 not yet
  /// measured); 18 / 23 / 24: feature-major runs variant 6, f32 variant 1. Variants 2, 4, 5, 8, 9,
  /// 11-17, 19-22 measured slower than the defaults and were dropped in session 9
  /// (docs/PERF-train.md "Session 9: variants dropped").
  /// Outputs are identical.
  int variant = 0;
  /// Bench / profiling only (variants 1, 3): at most this many CTAs resident per SM, by
  /// padding the launch with dynamic shared memory (the occupancy control of "Session 4"); 0 = no limit;
  /// -k: k CTAs fewer than the kernel's own occupancy.
  int max_ctas_per_sm = 0;
};

/// The MVUE kernels the API runs per dtype, layout and feature count (H200, docs/PERF-train.md
/// "Session 3c", "Session 4", "Session 5"):
/// - feature-major: variant 3 (whole-line stores) for f32 (1.14-1.15x over 1); variant 7 (the
///   ALU-lean form of 5 = 3 under a 64-register cap) for bf16 (1.025-1.028x over 5, which was
///   1.03-1.05x over 1, on the four measured shapes); variant 6 (the ALU-lean form of 1) for f16
///   (1.018-1.024x over 1; 3, 4, 5 measured 0.95-0.98x); variant 8 (session 6, the chunk in two
///   halves) measured 0.98x of 7 (bf16) and 0.97x of 6 (f16): not used; session 6b: variant 10
///   (the register-lean chunk kernel at 40 warps) for both 16-bit types, 1.03-1.04x over 7 (bf16)
///   and over 6 (f16) in the same run, where tokens % 32 == 0 (else the former defaults, 7 / 6);
///   session 7: variant 11 (10 staged by cp.async) measured 0.71-0.77x of 10: not used;
/// - token-major: variant 3 for 16-bit with n % 128 == 64 (n = 1600: 1.32-1.53x, the 64-feature
///   tiles remove variant 1's scalar edge tile); variant 5 for f16 with n % 128 == 0 and
///   n >= 4096 (the c_fc shapes: 1.01-1.04x; at n = 1280 0.95-0.97x); variant 1 elsewhere (bf16:
///   4 and 5 spill 40-48 B at 64 registers and measured 0.91-0.94x; the persistent variant 2
///   0.71-0.96x on every large shape). The lean forms measured 0.97-1.01x token-major (session
///   5): not used there; nor the 16-token x 2-feature threads of variants 12-14 (session 7: bf16
///   0.90-0.98x of variant 1 at 40-48 warps, f16 0.81-0.90x of variant 5); session 7b: variant 17
///   (the lean 16 x 4 thread with short live ranges at 32 warps on variant 5's 256 x 64 tiles) for
///   bf16 with n % 128 == 0 and n >= 4096 (1.06 / 1.07x over variant 1 at 16384 x 5120 / 6400 in
///   both bench processes; 15 / 16 1.04-1.08x; f16: 0.96-0.97x of variant 5, not used); session
///   7c: variant 18 (17 with feature 0's Philox words made between the loads and their first
///   use) replaces 17 there (1.01x / 1.03x over 17 at 16384 x 5120 / 6400 in both processes;
///   f16: 0.998x / 1.02x of variant 5, not used); session 8: variant 23 (for f16: 18 with the
///   token tiles along blockIdx.x) replaces 5 for f16 with n % 128 == 0 and n >= 4096 (1.004x /
///   1.02x over 5 at 16384 x 5120 / 6400 in all three bench processes); bf16 keeps 18 (21 / 23:
///   0.975-0.994x of 18).
/// Returns the variant that really runs for (dtype, layout, tokens, features), fallbacks included,
/// so that callers comparing against "the default" (bench/train_suite.cu) compare like with like.
inline int mvue24_default_variant(DType dtype, bool token_major, std::int64_t tokens, std::int64_t features) {
  if (!token_major) {
    if (dtype == DType::f32) return 3;
    // variant 10 needs whole 32-token chunks; else the session-5 defaults, 7 (bf16) / 6 (f16)
    return tokens % 32 == 0 ? 10 : (dtype == DType::bf16 ? 7 : 6);
  }
  if (dtype != DType::f32 && features % 128 != 0 && features % 64 == 0) return 3;
  if (dtype != DType::f32 && features % 128 == 0 && features >= 4096) return dtype == DType::f16 ? 23 : 18;
  return 1;
}

struct DecayArgs {
  void* grad = nullptr;
  const void* w = nullptr;
  const std::uint16_t* mask = nullptr;
  std::int64_t rows = 0, cols = 0;
  float lambda = 0.f;
  bool aligned = false;
};

struct GluArgs {
  int gate = 0;  ///< 0 = GEGLU, 1 = SwiGLU
  const void* in = nullptr;
  std::int64_t rows = 0, cols = 0, ld_in = 0, gate_offset = 0;
  void* out = nullptr;  ///< forward: out; backward: din (in's layout)
  std::int64_t ld_out = 0;
  const void* dout = nullptr;  ///< backward only
  std::int64_t ld_dout = 0;
  bool aligned = false;
};

template <class T> void launch_mask24(const Mask24Args& a, bool search, cudaStream_t s);
/// The launch arguments sparsenm::train::mvue24 builds (api.cu; variant 0), for tests and the
/// bench that select a kernel variant.
Mvue24Args make_mvue24_args(const void* g, std::int64_t tokens, std::int64_t features, GradLayout layout,
                            std::uint64_t seed, Compressed24View out);
template <class T> void launch_mvue24(const Mvue24Args& a, cudaStream_t s);
template <class T> void launch_masked_decay(const DecayArgs& a, cudaStream_t s);
template <class T> void launch_glu(const GluArgs& a, bool backward, cudaStream_t s);
void launch_flip_count(const std::uint16_t* a, const std::uint16_t* b, std::int64_t rows, std::int64_t cols,
                       unsigned long long* count, cudaStream_t s);

}  // namespace sparsenm::train::detail

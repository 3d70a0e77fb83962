// sparsenm — EW-N:M SpMM, fp32, X double-buffered by cp.async ("cuda:ew_spmm_async" and
// "cuda:ew_spmm_async16"). Same compute as ew_spmm_kernel (spmm_kernel.cuh: lane = row of W,
// MR = 16 rows of X, per stored slot one index decode + 16 LDS + 16 FFMA, all lanes inside one
// M-window: conflict-free for M <= 32); what changes is how X reaches shared memory.
//
// Why (docs/PERF.md, ew_spmm, session 4): the base kernel stages each phase's X through registers
// between two CTA barriers, so every warp of the CTA waits for the slowest X load of the phase,
// and the two CTAs of an SM start their phases together (same work, same start), so neither
// covers the other's staging. The measured share of the 32 FMA/clock/SM ceiling falls with the
// staged columns per slot (8:32: 4 columns, 82-86 %; 1:8, 4:32: 8 columns, 75-81 %; 3:32: 10.7,
// 72-77 %): loss ~ 8 % + 1.75 % per staged column per slot.
// Design: two X buffers; the copy of phase p + 1 (cp.async, 16 bytes, zero-filled past k and
//   past m) is issued right after the barrier that opens phase p, so it runs during phase p's
//   compute; one barrier per phase. The W tile stream also crosses phase boundaries (the first
//   tile of the next phase is requested during the last tile of this one): phases hold an even
//   number of tiles (or whole periods of kPeriod tiles for 3:32), so the pair loop needs no
//   register copy of a tile at a phase's end.
// Variants (SpmmAsyncTraits): kWarps = 8 with a 544-column pitch (2 x 34.8 KB: two CTAs per SM,
//   16 warps), or kWarps = 16 with a 1088-column pitch (2 x 69.6 KB, one CTA of 16 warps per SM;
//   the staged X is shared by 512 rows of W instead of 256: half the staging per FMA).
// x4 layout (variant "async_x4", the 16-byte-LDS experiment; N | 32 and M <= 8 only): X planes of
//   4 rows, [MR/4][kLd][4] floats, copied element-wise (4-byte cp.async, transposing); per slot
//   4 LDS.128 instead of 16 LDS.32. Same bytes per FMA; it asks whether the 16-byte reads of 32
//   lanes inside one 8-column window (8 distinct 16-byte chunks, 128 bytes) return in fewer than
//   4 cycles. docs/PERF.md predicts no (one 4-byte register per lane per clock).
// Limits: as ew_spmm: the L1/shared return path delivers 128 B = one 4-byte register per lane
//   per clock per SM, and every FMA needs its own X element, so 32 FMA/clock/SM; the W tile
//   (4 B value + b/8 B index per slot, 1/16 of the X bytes at MR = 16) and the cp.async bank
//   writes share the same data path.
// Alignment: the 16-byte copy needs X 16-byte aligned, k % 4 == 0 and M % 4 == 0 (so every phase
//   starts at a multiple of 4 columns); otherwise 4-byte copies (decided per launch, uniformly).
#pragma once
#include <cstdint>

#include "cuda/ew/spmm_kernel.cuh"

namespace sparsenm::cuda::ew {

/// fp32 SpMM traits with the CTA size and the X pitch of the async variants.
template <int B_, int NN_, int MM_, int kWarps_, int kLd_, bool kX4_>
struct SpmmAsyncTraits : SpmmTraits<float, kSpmmRows, B_, NN_, MM_> {
  static constexpr bool kX4 = kX4_;  ///< X as [MR/4 planes][kLd columns][4 rows]: LDS.128 per slot and plane
  static_assert(!kX4_ || (NN_ > 0 && MM_ <= 8 && 32 % (NN_ > 0 ? NN_ : 1) == 0), "x4: compile-time N | 32, M <= 8");
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = kWarps_ * 32;
  static constexpr int kRowsPerCta = kWarps_ * 32;
  static constexpr int kLd = kLd_;
  static constexpr int kMinBlocks = 16 / kWarps_;  ///< 16 warps per SM: 128 registers per thread at most
  static_assert(kLd_ % 4 == 0, "16-byte aligned X rows");
};

namespace detail {

__device__ __forceinline__ void cp_async_f32x4(float* dst, const float* src, int src_bytes) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_f32(float* dst, const float* src, int src_bytes) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

/// Issues (does not wait for) the copy of phase `ph`'s X columns, rows m0..m0+MR-1, into `dst`
/// ([MR][kLd] floats); columns past k and rows past m are zero-filled, global X is never read
/// past k or past m.
template <class Tr>
__device__ __forceinline__ void stage_x_async(float* dst, const SpmvArgs& a, int ph, int pn, int pm, int m0, bool vec) {
  constexpr int MR = Tr::MR, LD = Tr::kLd, T = Tr::kThreads;
  const int pe = min(ph + a.tiles_per_phase, a.tiles);
  const int w0 = ph * Tr::kSlots / pn, w1 = (pe * Tr::kSlots - 1) / pn + 1;
  const int c0 = w0 * pm, ncols = (w1 - w0) * pm;
  const float* x = static_cast<const float*>(a.x);
  if constexpr (Tr::kX4) {  // transposed: element (r, c) at plane r / 4, column c, lane r % 4
    for (int c = threadIdx.x; c < ncols; c += T) {
      const int col = c0 + c;
#pragma unroll
      for (int r = 0; r < MR; ++r) {
        const bool ok = m0 + r < a.m && col < a.k;
        cp_async_f32(dst + (r / 4) * LD * 4 + c * 4 + (r % 4), ok ? x + std::size_t(m0 + r) * a.k + col : x, ok ? 4 : 0);
      }
    }
    return;
  }
  if (vec) {  // ncols and c0 are multiples of 4 here
    for (int q = threadIdx.x * 4; q < ncols; q += T * 4) {
      const int col = c0 + q;
      const int kb = min(max(a.k - col, 0), 4) * 4;
#pragma unroll
      for (int r = 0; r < MR; ++r) {
        const bool ok = m0 + r < a.m && kb > 0;
        cp_async_f32x4(dst + r * LD + q, ok ? x + std::size_t(m0 + r) * a.k + col : x, ok ? kb : 0);
      }
    }
  } else {
    for (int c = threadIdx.x; c < ncols; c += T) {
      const int col = c0 + c;
#pragma unroll
      for (int r = 0; r < MR; ++r) {
        const bool ok = m0 + r < a.m && col < a.k;
        cp_async_f32(dst + r * LD + c, ok ? x + std::size_t(m0 + r) * a.k + col : x, ok ? 4 : 0);
      }
    }
  }
}

/// The x4 layout's tile (compile-time N | 32, M <= 8): per slot one index decode, then MR / 4
/// LDS.128 (one per plane of 4 X rows) and MR FFMA. The 32 lanes' 16-byte reads of one plane fall
/// in the M <= 8 consecutive 16-byte columns of one window: 8 distinct bank groups.
template <class Tr>
__device__ __forceinline__ void compute_spmm_tile_x4(const Tile<Tr>& tile, float (&acc)[Tr::MR], const float* xs, int t,
                                                     int w0) {
  constexpr int MR = Tr::MR, B = Tr::B, LD = Tr::kLd;
  const float4* base = reinterpret_cast<const float4*>(xs) + (t * Tr::kSlots / Tr::NN - w0) * Tr::MM;
#pragma unroll
  for (int j = 0; j < Tr::kSlots; ++j) {
    const float4* p = base + field<B>(tile.i, j) + (j / Tr::NN) * Tr::MM;
    const float w = value_at<float>(tile.v, j);
#pragma unroll
    for (int q = 0; q < MR / 4; ++q) {
      const float4 v = p[q * LD];
      acc[4 * q] = fmaf(w, v.x, acc[4 * q]);
      acc[4 * q + 1] = fmaf(w, v.y, acc[4 * q + 1]);
      acc[4 * q + 2] = fmaf(w, v.z, acc[4 * q + 2]);
      acc[4 * q + 3] = fmaf(w, v.w, acc[4 * q + 3]);
    }
  }
}

}  // namespace detail

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks) ew_spmm_async_kernel(const __grid_constant__ SpmvArgs a) {
  constexpr int MR = Tr::MR, LD = Tr::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  float* const buf0 = reinterpret_cast<float*>(smem);
  float* const buf1 = buf0 + MR * LD;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = blockIdx.x * Tr::kWarps + warp;
  const bool active = group < a.row_groups;
  const int pn = Tr::NN ? Tr::NN : a.pn, pm = Tr::MM ? Tr::MM : a.pm;
  const int m0 = blockIdx.y * MR;
  const bool vec = (reinterpret_cast<std::uintptr_t>(a.x) & 15u) == 0 && (a.k & 3) == 0 && (pm & 3) == 0;
  float acc[MR];
#pragma unroll
  for (int r = 0; r < MR; ++r) acc[r] = 0.0f;

  detail::Tile<Tr> ta, tb;
  if (active) detail::load_tile<Tr>(ta, a, group, lane, 0);
  detail::stage_x_async<Tr>(buf0, a, 0, pn, pm, m0, vec);
  detail::cp_async_commit();
  int p = 0;
  for (int ph = 0; ph < a.tiles; ph += a.tiles_per_phase, ++p) {
    const int pe = min(ph + a.tiles_per_phase, a.tiles);
    const int w0 = ph * Tr::kSlots / pn;
    const float* xs = (p & 1) ? buf1 : buf0;
    detail::cp_async_wait_all();  // this phase's copy (the only group in flight)
    __syncthreads();              // ... from every thread; and every warp is done with phase p - 1
    if (pe < a.tiles) {           // the next phase into the buffer phase p - 1 used
      detail::stage_x_async<Tr>((p & 1) ? buf0 : buf1, a, pe, pn, pm, m0, vec);
      detail::cp_async_commit();
    }
    if (!active) continue;
    if constexpr (Tr::kPeriod > 1) {
      constexpr int P = Tr::kPeriod, WP = P * Tr::kSlots / Tr::NN;
      const float* base = xs;
      for (int t = ph; t < pe; t += P, base += WP * Tr::MM) {
#pragma unroll
        for (int u = 0; u < P; ++u) {
          if (t + u < pe) {
            detail::Tile<Tr> nx;
            if (t + u + 1 < a.tiles) detail::load_tile<Tr>(nx, a, group, lane, t + u + 1);
            detail::compute_spmm_tile_spec<Tr>(ta, acc, base, LD, u);
            ta = nx;
          }
        }
      }
    } else {
      for (int t = ph; t < pe; t += 2) {
        if (t + 1 < a.tiles) detail::load_tile<Tr>(tb, a, group, lane, t + 1);
        if constexpr (Tr::kX4) detail::compute_spmm_tile_x4<Tr>(ta, acc, xs, t, w0);
        else detail::compute_spmm_tile<Tr>(ta, acc, xs, LD, t, w0, pn, pm);
        // Phases hold an even number of tiles (launch_spmm_async checks), so a phase ends on
        // the second tile of a pair with ta = its next tile; only the last phase may end on
        // the first (no next tile).
        if (t + 1 < pe) {
          if (t + 2 < a.tiles) detail::load_tile<Tr>(ta, a, group, lane, t + 2);
          if constexpr (Tr::kX4) detail::compute_spmm_tile_x4<Tr>(tb, acc, xs, t + 1, w0);
          else detail::compute_spmm_tile<Tr>(tb, acc, xs, LD, t + 1, w0, pn, pm);
        }
      }
    }
  }
  const int row = group * 32 + lane;
  if (active && row < a.n) {
#pragma unroll
    for (int r = 0; r < MR; ++r)
      if (m0 + r < a.m) detail::store_y(a.y, std::size_t(m0 + r) * a.n + row, acc[r], a.y_dtype);
  }
}

template <class Tr>
void launch_spmm_async(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream) {
  if (Tr::kPeriod > 1 && a.tiles_per_phase < a.tiles && a.tiles_per_phase % Tr::kPeriod != 0)
    throw InvalidArgument("tiles_per_phase", "ew_spmm_async: must be a multiple of the pattern's tile period " +
                                                 std::to_string(Tr::kPeriod) + " (got " +
                                                 std::to_string(a.tiles_per_phase) + "; plan_spmm rounds it)");
  if (Tr::kPeriod == 1 && a.tiles_per_phase < a.tiles && a.tiles_per_phase % 2 != 0)
    throw InvalidArgument("tiles_per_phase", "ew_spmm_async: must be even when the phases split the row (got " +
                                                 std::to_string(a.tiles_per_phase) + "; plan_spmm rounds it)");
  if (a.x_ld != Tr::kLd || cfg.smem_bytes < 2 * Tr::MR * Tr::kLd * 4)
    throw InvalidArgument("cfg", "ew_spmm_async: launch configuration from another variant (x_ld " +
                                     std::to_string(a.x_ld) + ", kernel pitch " + std::to_string(Tr::kLd) + ")");
  auto kernel = ew_spmm_async_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  const dim3 grid(unsigned((a.row_groups + Tr::kWarps - 1) / Tr::kWarps), unsigned((a.m + Tr::MR - 1) / Tr::MR), 1);
  kernel<<<grid, Tr::kThreads, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("ew_spmm_async_kernel");
}

}  // namespace sparsenm::cuda::ew

/// W = 8 warps with the 544-column pitch ("async"), or 16 warps with kSpmmLd ("async16").
#define SPARSENM_EW_SPMM_ASYNC_INSTANCE(B, NN, MM, W, LD)                                              \
  template void ::sparsenm::cuda::ew::launch_spmm_async<::sparsenm::cuda::ew::SpmmAsyncTraits<B, NN, MM, W, LD, false>>( \
      const ::sparsenm::cuda::ew::SpmvArgs&, const ::sparsenm::cuda::ew::SpmvConfig&, cudaStream_t);
/// The x4 layout ("async_x4": 8 warps, 544 columns per plane; N | 32, M <= 8).
#define SPARSENM_EW_SPMM_ASYNC_X4_INSTANCE(B, NN, MM)                                                \
  template void ::sparsenm::cuda::ew::launch_spmm_async<                                             \
      ::sparsenm::cuda::ew::SpmmAsyncTraits<B, NN, MM, 8, ::sparsenm::cuda::ew::kSpmmAsyncLd, true>>( \
      const ::sparsenm::cuda::ew::SpmvArgs&, const ::sparsenm::cuda::ew::SpmvConfig&, cudaStream_t);

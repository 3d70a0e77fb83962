// sparsenm — EW-N:M SpMM kernel (CUDA cores): Y[m][n] = X[m][k] * W^T for any m, fp32/fp16/bf16
// values with fp32 accumulation. Implements seed 001 (nmSPARSE) §3.2.2, the conflict-free
// broadcast design: an X tile in shared memory, threads over output columns n (rows of W), and
// all lanes of a warp reading X inside one M-window at every step.
//
// Data layout: W as for the SpMV kernel (spmv_layout.hpp: row groups of 32 = one warp, tiles of
//   32 slots, 16-byte value vectors and the b-bit index bitstream, interleaved so every warp load
//   is 512 contiguous bytes). X staged per phase as [MR rows][x_ld columns] in the weight dtype,
//   the columns of the windows the phase's tiles touch; zero past k and past m.
// Tiling: CTA = 8 warps = 256 rows of W (n) x MR = 16 rows of X (m); grid (ceil(n/256),
//   ceil(m/16)). X rows have a compile-time pitch (kSpmmLd) so a shared load is one LDS with an
//   immediate offset. X is staged as fp32 (converted once; per-product fp16 conversion would cap the
//   kernel at 16 FMA/clock/SM). Each lane owns one W row and MR fp32 accumulators; per stored slot it decodes
//   the index once and issues MR shared loads + MR FMAs (the weight value stays in a register).
// Coalescing: W as in SpMV (each W byte is read once per m tile of 16, from L2 after the first).
//   X staging reads X rows along k (coalesced) and writes consecutive shared words.
// Bank conflicts: at each step the 32 lanes read X row r at their slot j's column; slot j lies in
//   the same M-window for every row, so the 32 addresses fall in M consecutive elements of one
//   staged row: for M * sizeof(T) <= 128 bytes (fp32 M <= 32, fp16 M <= 64) they hit distinct
//   banks or broadcast — §3.2.2's argument for M = 32, for any such M.
// Limits: shared-memory bandwidth. Every FMA needs its own X element (columns differ per row in
//   EW), so one 4-byte shared word per FMA: 32 lanes x 4 B per clock = 32 FMA/clock/SM, a quarter
//   of the fp32 FMA rate. fp32 EW SpMM therefore reaches at most ~0.25 / density of the SGEMM
//   peak (1.0x at 75 %, 2.7x at 90.6 %), before staging and sync overheads.
// fp32 variants with X double-buffered by cp.async (the plan's f32 pick on the H200):
//   spmm_async_kernel.cuh; they reuse this file's tile compute.
// Specialised patterns (compile-time N, M): the window of every slot folds into the LDS
//   immediate. When N does not divide the 32-slot tile (3:32) a tile's first slot sits at phase
//   (32 t) mod N of a window; the phase repeats every kPeriod = N / gcd(N, 32) tiles, so the tile
//   loop runs in groups of kPeriod tiles (phases start at multiples of kPeriod: plan_spmm rounds
//   the tiles per phase), tile u of a group at the compile-time phase (32 u) mod N: slot j of it
//   lies (32 u + j) / N windows past the group's first — a constant, no window counter.
#pragma once
#include <numeric>

#include "cuda/common.cuh"
#include "cuda/ew/spmv.hpp"
#include "cuda/ew/spmv_kernel.cuh"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

/// SpMM instance traits: SpmvTraits' tile sizes, plus a compile-time pattern (NN, MM) that need
/// not divide the tile (SpmvTraits asserts N | 32 for the SpMV kernel).
template <class T, int MR_, int B_, int NN_ = 0, int MM_ = 0>
struct SpmmTraits : SpmvTraits<T, MR_, B_> {
  static constexpr int NN = NN_, MM = MM_;
  static constexpr int kPeriod = NN_ > 0 ? NN_ / std::gcd(NN_, 32) : 1;  ///< tiles per phase cycle
  static_assert(NN_ == 0 || (MM_ > NN_ && (1 << B_) >= MM_), "compile-time N < M <= 2^B");
};

namespace detail {

/// acc[r] += the tile's 32 products, compile-time pattern: `base` is the staged column of the
/// first window of the tile's period group, u (compile-time after unrolling) the tile's place in
/// that group, so slot j reads window (32 u + j) / N of the group: one index-field extract, then
/// MR LDS with immediate offsets and MR FFMA per slot.
template <class Tr>
__device__ __forceinline__ void compute_spmm_tile_spec(const Tile<Tr>& tile, float (&acc)[Tr::MR], const float* base,
                                                       int ld, int u) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR, B = Tr::B;
#pragma unroll
  for (int j = 0; j < Tr::kSlots; ++j) {
    const float* p = base + field<B>(tile.i, j) + ((u * Tr::kSlots + j) / Tr::NN) * Tr::MM;
    const float w = value_at<T>(tile.v, j);
#pragma unroll
    for (int r = 0; r < MR; ++r) acc[r] = fmaf(w, p[r * ld], acc[r]);
  }
}

template <class Tr>
__device__ __forceinline__ void compute_spmm_tile(const Tile<Tr>& tile, float (&acc)[Tr::MR],
                                                  const float* xs, int ld, int t, int w0, int pn, int pm) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR, B = Tr::B;
  const int sb = t * Tr::kSlots;
  if constexpr (Tr::NN > 0) {
    static_assert(Tr::kPeriod == 1, "N must divide the tile here (other N: the period loop)");
    compute_spmm_tile_spec<Tr>(tile, acc, xs + (sb / Tr::NN - w0) * Tr::MM, ld, 0);
  } else {
    const int wq = sb / pn;
    int c = sb - wq * pn;
    const float* base = xs + (wq - w0) * pm;
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const float* p = base + field<B>(tile.i, j);
      const float w = value_at<T>(tile.v, j);
#pragma unroll
      for (int r = 0; r < MR; ++r) acc[r] = fmaf(w, p[r * ld], acc[r]);
      if (++c == pn) {
        c = 0;
        base += pm;
      }
    }
  }
}

}  // namespace detail

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads) ew_spmm_kernel(const __grid_constant__ SpmvArgs a) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR;
  extern __shared__ __align__(16) unsigned char smem[];
  float* xs = reinterpret_cast<float*>(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = blockIdx.x * Tr::kWarps + warp;
  const bool active = group < a.row_groups;
  const int pn = Tr::NN ? Tr::NN : a.pn, pm = Tr::MM ? Tr::MM : a.pm;
  const int m0 = blockIdx.y * MR;
  constexpr int ld = kSpmmLd;
  float acc[MR];
#pragma unroll
  for (int r = 0; r < MR; ++r) acc[r] = 0.0f;
  const T* x = static_cast<const T*>(a.x);

  for (int ph = 0; ph < a.tiles; ph += a.tiles_per_phase) {
    const int pe = min(ph + a.tiles_per_phase, a.tiles);
    const int w0 = ph * Tr::kSlots / pn;
    const int w1 = (pe * Tr::kSlots - 1) / pn + 1;
    const int c0 = w0 * pm, ncols = (w1 - w0) * pm;
    detail::Tile<Tr> ta, tb;
    if (active) detail::load_tile<Tr>(ta, a, group, lane, ph);
    if (ph != 0) __syncthreads();
    // Staging: thread = column, all MR rows at once (MR independent loads in flight, no division).
    for (int c = threadIdx.x; c < ncols; c += Tr::kThreads) {
      const int col = c0 + c;
      float v[MR];
#pragma unroll
      for (int r = 0; r < MR; ++r)
        v[r] = (m0 + r < a.m && col < a.k) ? detail::to_f<T>(x[std::size_t(m0 + r) * a.k + col]) : 0.0f;
#pragma unroll
      for (int r = 0; r < MR; ++r) xs[r * ld + c] = v[r];
    }
    __syncthreads();
    if constexpr (Tr::kPeriod > 1) {
      // ph is a multiple of kPeriod, so window w0 starts exactly at tile ph's first slot, and each
      // group of kPeriod tiles spans WP whole windows.
      constexpr int P = Tr::kPeriod, WP = P * Tr::kSlots / Tr::NN;
      if (active) {
        const float* base = xs;
        for (int t = ph; t < pe; t += P, base += WP * Tr::MM) {
#pragma unroll
          for (int u = 0; u < P; ++u) {
            if (t + u < pe) {
              detail::Tile<Tr> nx;
              if (t + u + 1 < pe) detail::load_tile<Tr>(nx, a, group, lane, t + u + 1);
              detail::compute_spmm_tile_spec<Tr>(ta, acc, base, ld, u);
              ta = nx;
            }
          }
        }
      }
    } else if (active) {
      for (int t = ph; t < pe; t += 2) {
        if (t + 1 < pe) detail::load_tile<Tr>(tb, a, group, lane, t + 1);
        detail::compute_spmm_tile<Tr>(ta, acc, xs, ld, t, w0, pn, pm);
        if (t + 2 < pe) detail::load_tile<Tr>(ta, a, group, lane, t + 2);
        if (t + 1 < pe) detail::compute_spmm_tile<Tr>(tb, acc, xs, ld, t + 1, w0, pn, pm);
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
void launch_spmm(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream) {
  if (Tr::kPeriod > 1 && a.tiles_per_phase < a.tiles && a.tiles_per_phase % Tr::kPeriod != 0)
    throw InvalidArgument("tiles_per_phase", "ew_spmm: must be a multiple of the pattern's tile period " +
                                                 std::to_string(Tr::kPeriod) + " (got " +
                                                 std::to_string(a.tiles_per_phase) + "; plan_spmm rounds it)");
  auto kernel = ew_spmm_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  const dim3 grid(unsigned((a.row_groups + Tr::kWarps - 1) / Tr::kWarps), unsigned((a.m + Tr::MR - 1) / Tr::MR), 1);
  kernel<<<grid, Tr::kThreads, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("ew_spmm_kernel");
}

}  // namespace sparsenm::cuda::ew

#define SPARSENM_EW_SPMM_INSTANCE(T, B, NN, MM) \
  template void ::sparsenm::cuda::ew::launch_spmm<::sparsenm::cuda::ew::SpmmTraits<T, ::sparsenm::cuda::ew::kSpmmRows, B, NN, MM>>( \
      const ::sparsenm::cuda::ew::SpmvArgs&, const ::sparsenm::cuda::ew::SpmvConfig&, cudaStream_t);

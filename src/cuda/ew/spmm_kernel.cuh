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
#pragma once
#include "cuda/common.cuh"
#include "cuda/ew/spmv.hpp"
#include "cuda/ew/spmv_kernel.cuh"

namespace sparsenm::cuda::ew {

namespace detail {

template <class Tr>
__device__ __forceinline__ void compute_spmm_tile(const Tile<Tr>& tile, float (&acc)[Tr::MR],
                                                  const float* xs, int ld, int t, int w0, int pn, int pm) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR, B = Tr::B;
  const int sb = t * Tr::kSlots;
  if constexpr (Tr::NN > 0) {
    const float* base = xs + (sb / Tr::NN - w0) * Tr::MM;
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const float* p = base + field<B>(tile.i, j) + (j / Tr::NN) * Tr::MM;
      const float w = value_at<T>(tile.v, j);
#pragma unroll
      for (int r = 0; r < MR; ++r) acc[r] = fmaf(w, p[r * ld], acc[r]);
    }
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
    for (int e = threadIdx.x; e < ncols * MR; e += Tr::kThreads) {
      const int r = e / ncols, c = e - r * ncols;
      const int col = c0 + c;
      float v = 0.0f;
      if (m0 + r < a.m && col < a.k) v = detail::to_f<T>(x[std::size_t(m0 + r) * a.k + col]);
      xs[r * ld + c] = v;
    }
    __syncthreads();
    if (active) {
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
  auto kernel = ew_spmm_kernel<Tr>;
  if (cfg.smem_bytes > 48 * 1024)
    SPARSENM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg.smem_bytes));
  const dim3 grid(unsigned((a.row_groups + Tr::kWarps - 1) / Tr::kWarps), unsigned((a.m + Tr::MR - 1) / Tr::MR), 1);
  kernel<<<grid, Tr::kThreads, std::size_t(cfg.smem_bytes), stream>>>(a);
  SPARSENM_CUDA_CHECK_LAUNCH("ew_spmm_kernel");
}

}  // namespace sparsenm::cuda::ew

#define SPARSENM_EW_SPMM_INSTANCE(T, B, NN, MM) \
  template void ::sparsenm::cuda::ew::launch_spmm<::sparsenm::cuda::ew::SpmvTraits<T, ::sparsenm::cuda::ew::kSpmmRows, B, NN, MM>>( \
      const ::sparsenm::cuda::ew::SpmvArgs&, const ::sparsenm::cuda::ew::SpmvConfig&, cudaStream_t);

// sparsenm — EW-N:M SpMV / small-batch kernel: Y[m][n] = X[m][k] * W^T for m <= 8 (LLM decode).
// Implements seed 001 (nmSPARSE) §3.2.1, adapted to any N:M (M <= 256), fp16/bf16/fp32 values
// with fp32 accumulation, and to the packed b-bit in-window indices of our canonical format
// (nmSPARSE reads an int32 absolute index per value: 8 bytes per fp32 nonzero; we read b bits).
//
// Data layout (spmv_layout.hpp, repacked once at plan time):
//   W values : [row group of 32][tile of 32 slots][16-byte vector][lane][16 B]
//   W indices: [row group][tile][index load][lane][1, 2 or 4 words]; the lane's b words hold its
//              32 b-bit in-window indices as one little-endian bitstream (canonical packing).
//   X        : staged in shared memory as fp32, transposed to [column][MR] (MR = 8: padded to 12
//              floats), for the columns the CTA's tiles touch (zero past k and past m). Converting
//              once at staging matters: fp16 -> fp32 conversion runs at 16 lanes/clock/SM on
//              Hopper, and converting X per product capped m = 8 at ~1.8 slots/clock/SM (run 1).
// Tiling: a CTA is 8 warps = 256 consecutive output rows (lane = row) x a range of tiles along k
//   (split-k: `ksplit` CTAs of one thread-block cluster share the rows; their fp32 partials are
//   summed through distributed shared memory, no atomics, no second kernel). Each lane streams its
//   row's tiles: kVecs 16-byte value loads + b index words per 32 slots, two tiles in flight.
// Coalescing: at every load instruction the 32 lanes read 32 consecutive 16-byte vectors (512 B)
//   or 32 consecutive index vectors: every byte of W is read once, in full sectors.
// Bank conflicts: all lanes process the same slot j of their own rows at the same time, and slot
//   j lies in the same M-window for every row, so the 32 X reads of one LDS fall inside M
//   consecutive staged columns. MR = 1 (4 B per column): conflict-free for M <= 32 (distinct words
//   in distinct banks, equal words broadcast) — the §3.2.1 argument, for any such M. MR = 4
//   (16 B) and MR = 8 (48 B stride, two 16-byte reads): conflict-free for M <= 8; wider windows
//   can put two of a quarter-warp's 8 lanes in one bank group (at most M/8 ways).
// Index decode: the tile's slot j and bit offset j*b are compile-time constants (unrolled), so a
//   field is one shift+mask (or a funnel shift when it straddles two words); with N and M known
//   at compile time the window offset (j / N) * M folds into the LDS immediate.
// Limits: HBM bandwidth for W (the floor: condensed bytes / copy bandwidth) at m = 1..4. At m = 8
//   shared-memory bandwidth: 32 B of X per slot = 8 wavefronts per warp-slot, i.e. at most
//   4 slots/clock/SM, against the ~7 slots/clock/SM that HBM delivers for fp16 at b = 3. Tails: rows past n and slots past the row's stored slots are
//   zero in the packed weight; padding slots of the last window (column >= k) multiply the zeros
//   stored in shared memory past k, so global X is never read past k.
#pragma once
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/stream_tile.cuh"
#include "cuda/ew/spmv_traits.cuh"

namespace sparsenm::cuda::ew {

namespace detail {

template <class T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Element j (compile-time after unrolling) of a tile's value words as float.
template <class T, int W>
__device__ __forceinline__ float value_at(const std::uint32_t (&vw)[W], int j) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(vw[j]);
  } else {
    const std::uint32_t word = vw[j >> 1];
    const unsigned short bits = (j & 1) ? (unsigned short)(word >> 16) : (unsigned short)(word & 0xffffu);
    if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(bits));
    else return __uint_as_float(std::uint32_t(bits) << 16);
  }
}

/// b-bit field j of the lane's index bitstream.
template <int B>
__device__ __forceinline__ unsigned field(const std::uint32_t (&iw)[B], int j) {
  const int bit = j * B, w = bit >> 5, s = bit & 31;
  if (s + B <= 32) return (iw[w] >> s) & ((1u << B) - 1u);
  return __funnelshift_r(iw[w], iw[w + 1], s) & ((1u << B) - 1u);
}

__device__ __forceinline__ void bf2_to_f2(std::uint32_t w, float& a, float& b) {
  a = __uint_as_float(w << 16);
  b = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void h2_to_f2(std::uint32_t w, float& a, float& b) {
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
  a = f.x;
  b = f.y;
}

/// Reads the MR fp32 X values of one staged column (byte address p, 16-byte aligned for MR >= 4).
template <int MR>
__device__ __forceinline__ void load_x(const unsigned char* p, float (&xv)[MR]) {
  if constexpr (MR == 1) {
    xv[0] = *reinterpret_cast<const float*>(p);
  } else {
#pragma unroll
    for (int q = 0; q < MR / 4; ++q) {
      const float4 f = reinterpret_cast<const float4*>(p)[q];
      xv[4 * q] = f.x, xv[4 * q + 1] = f.y, xv[4 * q + 2] = f.z, xv[4 * q + 3] = f.w;
    }
  }
}

__device__ __forceinline__ void store_y(void* y, std::size_t i, float v, int y_dtype) {
  if (y_dtype == 0) static_cast<float*>(y)[i] = v;
  else if (y_dtype == 1) static_cast<__half*>(y)[i] = __float2half_rn(v);
  else static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(v);
}

/// One tile of one lane in registers.
template <class Tr>
struct Tile {
  std::uint32_t v[Tr::kVecs * 4];
  std::uint32_t i[Tr::kIdxWords];
};

template <class Tr>
__device__ __forceinline__ void load_tile(Tile<Tr>& tile, const SpmvArgs& a, int group, int lane, int t) {
  load_stream_tile<Tr::kVecs, Tr::kIdxLoads, Tr::kIdxVec>(tile.v, tile.i, a.values, a.indices, std::size_t(group) * a.tiles + t, lane);
}

/// acc[r] += sum over the tile's 32 slots of w * X[r][col]. xs: shared X of this phase, whose
/// first column is window w0's first column.
template <class Tr>
__device__ __forceinline__ void compute_tile(const Tile<Tr>& tile, float (&acc)[Tr::MR], const unsigned char* xs,
                                             int t, int w0, int pn, int pm) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR, B = Tr::B, XB = Tr::kXBytes;
  const int sb = t * Tr::kSlots;
  if constexpr (Tr::NN > 0) {
    const unsigned char* base = xs + (sb / Tr::NN - w0) * Tr::MM * XB;
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const unsigned idx = field<B>(tile.i, j);
      float xv[MR];
      load_x<MR>(base + (idx + (j / Tr::NN) * Tr::MM) * XB, xv);
      const float w = value_at<T>(tile.v, j);
#pragma unroll
      for (int r = 0; r < MR; ++r) acc[r] = fmaf(w, xv[r], acc[r]);
    }
  } else {
    const int wq = sb / pn;
    int c = sb - wq * pn;
    const unsigned char* base = xs + (wq - w0) * pm * XB;
    const int step = pm * XB;
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const unsigned idx = field<B>(tile.i, j);
      float xv[MR];
      load_x<MR>(base + idx * XB, xv);
      const float w = value_at<T>(tile.v, j);
#pragma unroll
      for (int r = 0; r < MR; ++r) acc[r] = fmaf(w, xv[r], acc[r]);
      if (++c == pn) {
        c = 0;
        base += step;
      }
    }
  }
}

}  // namespace detail

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads) ew_spmv_kernel(const __grid_constant__ SpmvArgs a) {
  using T = typename Tr::Elem;
  constexpr int MR = Tr::MR;
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = blockIdx.x * Tr::kWarps + warp;
  const bool active = group < a.row_groups;
  const int pn = Tr::NN ? Tr::NN : a.pn, pm = Tr::MM ? Tr::MM : a.pm;

  const int t_begin = blockIdx.y * a.tiles_per_split;
  const int t_end = min(a.tiles, t_begin + a.tiles_per_split);
  float acc[MR];
#pragma unroll
  for (int r = 0; r < MR; ++r) acc[r] = 0.0f;

  const T* x = static_cast<const T*>(a.x);
  for (int ph = t_begin; ph < t_end; ph += a.tiles_per_phase) {
    const int pe = min(ph + a.tiles_per_phase, t_end);
    const int w0 = ph * Tr::kSlots / pn;
    const int w1 = (pe * Tr::kSlots - 1) / pn + 1;
    const int c0 = w0 * pm, ncols = (w1 - w0) * pm;

    detail::Tile<Tr> ta, tb;
    if (active) {  // two tiles in flight while X is staged
      detail::load_tile<Tr>(ta, a, group, lane, ph);
      if (ph + 1 < pe) detail::load_tile<Tr>(tb, a, group, lane, ph + 1);
    }
    if (ph != t_begin) __syncthreads();
    // Stage X[0..MR)[c0, c0 + ncols) as fp32 [column][kXStride] (converted once here, not per
    // product); zeros past k and for rows past m.
    float* xs = reinterpret_cast<float*>(smem);
    for (int e = threadIdx.x; e < ncols * MR; e += Tr::kThreads) {
      const int r = e / ncols, c = e - r * ncols;
      const int col = c0 + c;
      float v = 0.0f;
      if (r < a.m && col < a.k) v = detail::to_f<T>(x[std::size_t(r) * a.k + col]);
      xs[c * Tr::kXStride + r] = v;
    }
    __syncthreads();
    if (active) {
      for (int t = ph; t < pe; t += 2) {  // each buffer is refilled as soon as it is consumed
        detail::compute_tile<Tr>(ta, acc, smem, t, w0, pn, pm);
        if (t + 2 < pe) detail::load_tile<Tr>(ta, a, group, lane, t + 2);
        if (t + 1 < pe) {
          detail::compute_tile<Tr>(tb, acc, smem, t + 1, w0, pn, pm);
          if (t + 3 < pe) detail::load_tile<Tr>(tb, a, group, lane, t + 3);
        }
      }
    }
  }

  const int row = group * 32 + lane;
  if (a.ksplit == 1) {
    if (active && row < a.n) {
#pragma unroll
      for (int r = 0; r < MR; ++r)
        if (r < a.m) detail::store_y(a.y, std::size_t(r) * a.n + row, acc[r], a.y_dtype);
    }
    return;
  }
  // Split-k: partials in this CTA's shared memory, summed across the cluster through DSMEM.
  // Clusters exist from sm_90 on; before that the host plans ksplit = 1 (register.cu).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();
#else
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();  // every thread is done reading the staged X
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int r = 0; r < MR; ++r) red[r * Tr::kRowsPerCta + threadIdx.x] = acc[r];
  cluster.sync();
  const int rank = int(cluster.block_rank()), ks = a.ksplit;
  for (int o = rank + ks * int(threadIdx.x); o < MR * Tr::kRowsPerCta; o += ks * Tr::kThreads) {
    const int r = o / Tr::kRowsPerCta, rr = o - r * Tr::kRowsPerCta;
    const int grow = blockIdx.x * Tr::kRowsPerCta + rr;
    float s = 0.0f;
    for (int p = 0; p < ks; ++p) s += cluster.map_shared_rank(red, p)[o];
    if (r < a.m && grow < a.n) detail::store_y(a.y, std::size_t(r) * a.n + grow, s, a.y_dtype);
  }
  cluster.sync();  // keep this CTA's partials alive until every peer has read them
#endif
}

}  // namespace sparsenm::cuda::ew

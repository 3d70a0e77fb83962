// sparsenm — epilogue shared by the sparse tensor-core kernels: fp32 tile in shared memory ->
// Y (f32, f16 or bf16), 16-byte stores where the row allows, guarded in m and n.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace sparsenm::cuda::sptc {

template <class Out>
__device__ __forceinline__ Out to_out(float v);
template <>
__device__ __forceinline__ float to_out<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half to_out<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 to_out<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }


/// Writes a staged fp32 tile st[ROWS][LD] whose rows hold COLS consecutive output columns to
/// out[rows_total][ld] at (r0, c0), converting to Out; 16-byte stores where vec_store allows
/// (ld and the base pointer 16-byte aligned), guarded in rows (< rows_total) and columns
/// (< cols_total). Used for transposed outputs (y^T [n][m]: a row is one W row, COLS Y rows).
template <class Out, int ROWS, int COLS, int LD>
__device__ __forceinline__ void store_tile_rows(const float* st, Out* out, int r0, int c0, int rows_total, int cols_total,
                                                std::size_t ld, int vec_store, int tid) {
  constexpr int EPC = int(16 / sizeof(Out));
  constexpr int CHUNKS = COLS / EPC;
  static_assert(COLS % EPC == 0 && LD % 4 == 0, "16-byte chunks of the staged rows");
  for (int idx = tid; idx < ROWS * CHUNKS; idx += 128) {
    const int row = idx / CHUNKS, ch = idx % CHUNKS;
    const int gr = r0 + row, gc = c0 + ch * EPC;
    if (gr >= rows_total || gc >= cols_total) continue;
    const float* src = st + row * LD + ch * EPC;
    Out* dst = out + std::size_t(gr) * ld + gc;
    if (vec_store && gc + EPC <= cols_total) {
      if constexpr (sizeof(Out) == 4) {
        *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
      } else {
        const float4 lo = *reinterpret_cast<const float4*>(src);
        const float4 hi = *reinterpret_cast<const float4*>(src + 4);
        alignas(16) Out v[8] = {to_out<Out>(lo.x), to_out<Out>(lo.y), to_out<Out>(lo.z), to_out<Out>(lo.w),
                                to_out<Out>(hi.x), to_out<Out>(hi.y), to_out<Out>(hi.z), to_out<Out>(hi.w)};
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(v);
      }
    } else {
      for (int e = 0; e < EPC && gc + e < cols_total; ++e) dst[e] = to_out<Out>(src[e]);
    }
  }
}

/// Writes a staged fp32 tile st[rows][LD] (row = row of Y, 64 consecutive Y columns) to
/// y[m][n] at (m0, n0), converting to Out; 16-byte stores where allowed, guarded in m and in n
/// (columns < min(n, n_end)). The row-major case of store_tile_rows.
/// Stages J column groups of a consumer warpgroup's wgmma accumulator fragments (starting at
/// acc[first]; 4 floats per group of 8 columns) into a float tile with row stride LD. `base` is the
/// thread's own address, st + (2 t) LD + 16 w + g (w: warp of the warpgroup, g / t: lane / 4, lane
/// % 4), so every other offset is a compile-time immediate (keeps the epilogues spill-free).
template <int J, int LD, int R>
__device__ __forceinline__ void stage_fragments(float* base, const float (&acc)[R], int first) {
#pragma unroll
  for (int j = 0; j < J; ++j) {
    base[j * 8 * LD] = acc[first + 4 * j + 0];
    base[j * 8 * LD + LD] = acc[first + 4 * j + 1];
    base[j * 8 * LD + 8] = acc[first + 4 * j + 2];
    base[j * 8 * LD + LD + 8] = acc[first + 4 * j + 3];
  }
}

template <class Out, int ROWS, int LD>
__device__ __forceinline__ void store_tile(const float* st, Out* y, int m0, int n0, int m, int n, int vec_store,
                                           int tid, int n_end = 0x7fffffff) {
  store_tile_rows<Out, ROWS, 64, LD>(st, y, m0, n0, m, n < n_end ? n : n_end, std::size_t(n), vec_store, tid);
}

}  // namespace sparsenm::cuda::sptc

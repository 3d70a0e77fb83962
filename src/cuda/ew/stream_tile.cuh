// sparsenm — the weight-tile load shared by the EW SpMV kernels (ew_spmv, ew_spmv_tc): a tile is
// VECS x 32 lanes of 16-byte value vectors followed by IDX_LOADS x 32 lanes of IDX_VEC-word index
// loads, both in lane order (512 contiguous bytes per warp load), read once with evict-first.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sparsenm::cuda::ew {

/// Loads global tile `gt` of a packed weight into the lane's registers v[4 * VECS], i[IDX_LOADS * IDX_VEC].
template <int VECS, int IDX_LOADS, int IDX_VEC>
__device__ __forceinline__ void load_stream_tile(std::uint32_t* v, std::uint32_t* i, const void* values,
                                                 const std::uint32_t* indices, std::size_t gt, int lane) {
  static_assert(IDX_VEC == 1 || IDX_VEC == 2 || IDX_VEC == 4, "index loads are 1, 2 or 4 words");
  const uint4* vp = static_cast<const uint4*>(values) + gt * VECS * 32 + lane;
#pragma unroll
  for (int q = 0; q < VECS; ++q) {
    const uint4 u = __ldcs(vp + q * 32);  // streamed once: evict-first
    v[4 * q] = u.x, v[4 * q + 1] = u.y, v[4 * q + 2] = u.z, v[4 * q + 3] = u.w;
  }
  const std::uint32_t* ip = indices + (gt * IDX_LOADS * 32 + lane) * IDX_VEC;
#pragma unroll
  for (int q = 0; q < IDX_LOADS; ++q) {
    if constexpr (IDX_VEC == 4) {
      const uint4 u = __ldcs(reinterpret_cast<const uint4*>(ip + q * 32 * 4));
      i[4 * q] = u.x, i[4 * q + 1] = u.y, i[4 * q + 2] = u.z, i[4 * q + 3] = u.w;
    } else if constexpr (IDX_VEC == 2) {
      const uint2 u = __ldcs(reinterpret_cast<const uint2*>(ip + q * 32 * 2));
      i[2 * q] = u.x, i[2 * q + 1] = u.y;
    } else {
      i[q] = __ldcs(ip + q * 32);
    }
  }
}

/// The index part of a tile as it lies in a shared-memory ring stage (the same lane order as in
/// global memory, `ip` = the stage's index words + lane * IDX_VEC) into i[IDX_LOADS * IDX_VEC].
template <int IDX_LOADS, int IDX_VEC>
__device__ __forceinline__ void read_stage_indices(std::uint32_t* i, const std::uint32_t* ip) {
  static_assert(IDX_VEC == 1 || IDX_VEC == 2 || IDX_VEC == 4, "index loads are 1, 2 or 4 words");
#pragma unroll
  for (int q = 0; q < IDX_LOADS; ++q) {
    if constexpr (IDX_VEC == 4) {
      const uint4 u = *reinterpret_cast<const uint4*>(ip + q * 32 * 4);
      i[4 * q] = u.x, i[4 * q + 1] = u.y, i[4 * q + 2] = u.z, i[4 * q + 3] = u.w;
    } else if constexpr (IDX_VEC == 2) {
      const uint2 u = *reinterpret_cast<const uint2*>(ip + q * 32 * 2);
      i[2 * q] = u.x, i[2 * q + 1] = u.y;
    } else {
      i[q] = ip[q * 32];
    }
  }
}
}  // namespace sparsenm::cuda::ew

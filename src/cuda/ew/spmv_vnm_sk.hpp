// sparsenm — native V:2:M SpMV for m = 1, stream-K form ("cuda:vnm_spmv_sk", "cuda:vnm_spmv_skr"):
// host-side configuration and dispatch. The kernel is ew_spmv_sk_kernel with SkTraits::VM = M
// (spmv_sk_kernel.cuh, "V:2:M"); the weight is packed by detail::pack_vnm_sk (format/vnm_sk_pack.hpp).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "cuda/ew/spmv_sk.hpp"
#include "format/vnm_sk_pack.hpp"

namespace sparsenm::cuda::ew {

/// The compiled instance for (dtype, M, ring), or null: f16 / bf16, M in {8, 16}, ring 0 (two-tile
/// register ring, "cuda:vnm_spmv_sk") or 3 (shared-memory ring, "cuda:vnm_spmv_skr").
SkLaunchFn find_vnm_sk(DType dtype, int vm, int ring);
SkOccupancyFn find_vnm_sk_occupancy(DType dtype, int vm, int ring);

/// Dynamic shared memory of one CTA: X (k rounded up to the last tile's window end, in the weight
/// dtype, rounded to 128 B) + 8 warps x ring stages (values + index words + 32-byte table) + 8 warps
/// x two 256-byte gather buffers (64 floats each).
int vnm_sk_smem_bytes(const ::sparsenm::detail::VnmSkLayout& l, int ring);

/// Why (weight layout, dtype, m, ring) cannot run on vnm_spmv_sk ("" if it can; the shared-memory
/// opt-in limit of the device is checked by the plan candidate).
std::string vnm_sk_unsupported(const FormatLayout& f, DType dtype, long long m, int ring);

/// Fills every field of `a` but the pointers (values, indices, tab, x, y, ws, cnt) and y_dtype;
/// one wave of resident CTAs. grid_override > 0 forces the number of CTAs (tests).
SkConfig plan_vnm_sk(const ::sparsenm::detail::VnmSkLayout& l, DType dtype, int sms, int ring, SkArgs& a, int grid_override = 0);

/// Bytes of the fp32 workspace and of the counters a plan must allocate (zeroed once).
inline std::size_t vnm_sk_ws_bytes(const ::sparsenm::detail::VnmSkLayout& l) { return std::size_t(l.row_groups) * 32 * sizeof(float); }
inline std::size_t vnm_sk_cnt_bytes(const ::sparsenm::detail::VnmSkLayout& l) { return std::size_t(l.row_groups) * sizeof(unsigned); }

}  // namespace sparsenm::cuda::ew

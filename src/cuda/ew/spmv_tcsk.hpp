// sparsenm — EW-N:M tensor-core SpMV on the stream-K ring (cuda:ew_spmv_tc_sk, m = 1..8; docs/PERF.md
// session 8): the tensor-core tile and PRMT decode of ew_spmv_tc_ring, streamed the way the m = 1
// stream-K ring kernels stream (per-warp contiguous unit ranges, a 3-stage shared-memory tile ring
// per warp filled by 16-byte cp.async, the weight stored in the order the ranges consume it).
// Host-side arguments, plan and dispatch; the kernel is spmv_tcsk_kernel.cuh.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/ew/spmv_tc_layout.hpp"

namespace sparsenm::cuda::ew {

/// Arguments of one launch (sizes in elements; pointers on the device).
struct TcSkArgs {
  const void* values = nullptr;            ///< tiles in unit order (reorder_spmv_tcsk)
  const std::uint32_t* indices = nullptr;  ///< index words in unit order
  const void* x = nullptr;                 ///< [m][k], weight dtype
  void* y = nullptr;                       ///< [m][n], y_dtype
  float* ws = nullptr;                     ///< [row_blocks * 16][8] fp32, zero between launches
  unsigned* cnt = nullptr;                 ///< [row_blocks] tiles added, zero between launches
  int n = 0, k = 0, m = 0;
  int tiles = 0, row_blocks = 0;           ///< tiles per row block, ceil(n / 16)
  int kc = 0, chunks = 0;                  ///< tiles per k chunk, ceil(tiles / kc)
  long long units = 0;                     ///< row_blocks * tiles
  int cta_warps = 16;                      ///< warps per CTA (1..16)
  int warps_total = 0;                     ///< grid * cta_warps
  int pitch = 0;                           ///< bytes of one staged X row (spmv_tc_pitch of the widest CTA span)
  int x_off = 0;                           ///< byte offset of the staged X (after the selector table)
  int ring_off = 0;                        ///< byte offset of the warps' tile rings
  int bar_off = 0;                         ///< byte offset of the X pieces' mbarriers (32 x 8 B; kTcSkFixPrologue)
  int y_dtype = 0;                         ///< 0 f32, 1 f16, 2 bf16
  int x_vec = 0;                           ///< 1: k % 8 == 0 and x 16-byte aligned (set per run)
};

struct TcSkConfig {
  int grid = 0;        ///< CTAs (one per SM by default)
  int smem_bytes = 0;  ///< dynamic shared memory per CTA
};

using TcSkLaunchFn = void (*)(const TcSkArgs&, const TcSkConfig&, cudaStream_t);

constexpr int kTcSkRing = 3;       ///< ring stages per warp
constexpr int kTcSkMaxWarps = 16;  ///< warps per CTA (launch bound)
/// Session-9b fixes of the fixed costs (TcSkTraits FIX bits; docs/PERF.md "Session 9b"): X staged in pieces with one
/// mbarrier each, every warp starting on its first tile without a CTA-wide wait; the boundary partials as 16-byte
/// REDs and the completed row blocks read back with plain L2 loads instead of atomicExch.
constexpr int kTcSkFixPrologue = 1;
constexpr int kTcSkFixSettle = 2;
/// With kTcSkFixPrologue: the pieces issued by lane 0 of warp p mod warps (one thread per warp), not by threads 0..P-1
/// (the lanes of warp 0, which serialise the uniform-datapath mbarrier / bulk-copy instructions: session 9b ncu).
constexpr int kTcSkFixSpread = 4;
constexpr int kTcSkBarBytes = 32 * 8;  ///< the X pieces' mbarriers

/// Warps per CTA x ring stages of the dense kernel (session 8c, docs/PERF.md): w16r3 is
/// cuda:ew_spmv_tc_sk (16 warps, 3 stages); w24r3 "cuda:ew_spmv_tc_sk24" (24 warps, 3 stages: 48 tiles in
/// flight per SM, 6 warps per scheduler, a smaller X span = more k chunks); w24r2 "cuda:ew_spmv_tc_sk24r2"
/// (24 warps, 2 stages: 24 tiles in flight, the X span of tc_sk); w16r4 "cuda:ew_spmv_tc_sk16r4" (16
/// warps, 4 stages: 48 tiles in flight at tc_sk's 4 warps per scheduler). tc_sp exists as w16r3 only.
/// (Session 9 tried 12 x 6, 8 x 8 and the w16r4 / w24r2 rings plus an L2 prefetch: slower in every bar case,
/// removed in session 9b; docs/PERF.md "Session 9 measured".)
/// Session 9b (docs/PERF.md "Session 9b measured"): w16r3s "cuda:ew_spmv_tc_sks" (the settle fix on the tc_sk shape;
/// raced), w16r4b "cuda:ew_spmv_tc_sk16r4b" (both fixes on the tc_sk16r4 shape; raced), w16r4s / w24r2s
/// "cuda:ew_spmv_tc_sk16r4s" / "_sk24r2s" (the settle fix on the tc_sk16r4 / tc_sk24r2 shapes; built after the
/// session's device call, not run on a GPU yet: opt-in). The forms measured in 9b and dropped: tc_skp (prologue fix
/// alone), tc_skb (both on tc_sk), tc_sk24r2b (both on tc_sk24r2): the fastest in no case.
/// w16r4c "cuda:ew_spmv_tc_sk16r4c": tc_sk16r4b with the piece issue spread over the warps (kTcSkFixSpread; built after
/// the device call: opt-in, not run on a GPU yet).
enum class TcSkShape : int { w16r3 = 0, w24r3 = 1, w24r2 = 2, w16r4 = 3, w16r3s = 4, w16r4b = 5, w16r4s = 6, w24r2s = 7, w16r4c = 8 };
constexpr int tcsk_shape_warps(TcSkShape s) {
  return s == TcSkShape::w24r3 || s == TcSkShape::w24r2 || s == TcSkShape::w24r2s ? 24 : 16;
}
constexpr int tcsk_shape_ring(TcSkShape s) {
  return s == TcSkShape::w24r2 || s == TcSkShape::w24r2s                                 ? 2
         : s == TcSkShape::w16r4 || s == TcSkShape::w16r4b || s == TcSkShape::w16r4s || s == TcSkShape::w16r4c ? 4
                                                                                          : 3;
}
/// The kTcSkFix* bits of a shape (0: the session-8 kernel).
constexpr int tcsk_shape_fix(TcSkShape s) {
  return s == TcSkShape::w16r4c                                                        ? kTcSkFixPrologue | kTcSkFixSettle | kTcSkFixSpread
         : s == TcSkShape::w16r4b                                                      ? kTcSkFixPrologue | kTcSkFixSettle
         : s == TcSkShape::w16r3s || s == TcSkShape::w16r4s || s == TcSkShape::w24r2s ? kTcSkFixSettle
                                                                                        : 0;
}
/// The plan candidate's name of a dense shape ("cuda:ew_spmv_tc_sk" for w16r3).
constexpr const char* tcsk_shape_kernel(TcSkShape s) {
  switch (s) {
    case TcSkShape::w24r3: return "cuda:ew_spmv_tc_sk24";
    case TcSkShape::w24r2: return "cuda:ew_spmv_tc_sk24r2";
    case TcSkShape::w16r4: return "cuda:ew_spmv_tc_sk16r4";
    case TcSkShape::w16r3s: return "cuda:ew_spmv_tc_sks";
    case TcSkShape::w16r4b: return "cuda:ew_spmv_tc_sk16r4b";
    case TcSkShape::w16r4s: return "cuda:ew_spmv_tc_sk16r4s";
    case TcSkShape::w24r2s: return "cuda:ew_spmv_tc_sk24r2s";
    case TcSkShape::w16r4c: return "cuda:ew_spmv_tc_sk16r4c";
    default: return "cuda:ew_spmv_tc_sk";
  }
}

/// The compiled instance (f16 / bf16; 2:8, 1:8, 2:16, 1:16), or null. sparse: cuda:ew_spmv_tc_sp, the same
/// tile, ring and arguments on the sparse tensor cores (mma.sp m16n8k32; spmv_tcsp_decode.cuh, session 8b).
/// shape: warps x stages (dense only; a sparse request with another shape gets null).
TcSkLaunchFn find_spmv_tcsk(DType dtype, int pn, int pm, bool sparse = false, TcSkShape shape = TcSkShape::w16r3);

/// Why (layout, dtype, m) cannot run on ew_spmv_tc_sk (or ew_spmv_tc_sp) ("" if it can).
std::string spmv_tcsk_unsupported(const FormatLayout& f, DType dtype, long long m, bool sparse = false);

/// Chunk of unit u (units in chunk-major order: every chunk but the last holds row_blocks * kc units).
inline long long tcsk_chunk_of(long long u, long long row_blocks, long long kc) { return u / (row_blocks * kc); }

/// Plan: grid (default: one CTA per SM), warps per CTA (default tcsk_shape_warps(shape)), the largest k chunk
/// whose widest CTA span of X fits the shared memory left by the selector table and the rings.
/// `smem_limit`: the device's opt-in bytes per CTA. Overrides (> 0) for tests: grid, warps, kc.
/// Throws InvalidArgument if even one tile of X does not fit. Fills every field of `a` but the
/// pointers, y_dtype and x_vec.
/// sparse: the plan of ew_spmv_tc_sp (its own table size; X pitch spmv_tc_pitch(cols, M / 2)).
TcSkConfig plan_spmv_tcsk(const SpmvTcLayout& l, int m, int sms, int smem_limit, TcSkArgs& a, int grid_override = 0,
                          int warps_override = 0, int kc_override = 0, bool sparse = false,
                          TcSkShape shape = TcSkShape::w16r3);

/// The tc-layout tiles (pack_spmv_tc) stored in unit order for kc: unit u = (chunk c, row block rb,
/// tile tt of the chunk) at slot u, c-major, then rb, then tt. Plan time, once.
void reorder_spmv_tcsk(const SpmvTcPacked& p, int kc, std::vector<std::byte>& values, std::vector<std::uint32_t>& indices);

/// Bytes of the fp32 workspace and of the counters (zeroed once; every launch leaves them zero).
inline std::size_t spmv_tcsk_ws_bytes(const SpmvTcLayout& l) { return std::size_t(l.row_blocks) * 16 * 8 * 4; }
inline std::size_t spmv_tcsk_cnt_bytes(const SpmvTcLayout& l) { return std::size_t(l.row_blocks) * 4; }

}  // namespace sparsenm::cuda::ew

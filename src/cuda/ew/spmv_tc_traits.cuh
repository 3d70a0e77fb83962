// sparsenm — EW-N:M tensor-core SpMV traits: compile-time shape of one kernel instance. The
// kernel (spmv_tc_kernel.cuh) reads only these; the launch (spmv_tc_launch.cuh) turns a problem
// into grid / cluster / shared memory.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/spmv_traits.cuh"

namespace sparsenm::cuda::ew {

/// Arguments of one tensor-core SpMV launch (sizes in elements; pointers on the device).
struct SpmvTcArgs {
  const void* values = nullptr;            ///< packed values (spmv_tc_layout.hpp)
  const std::uint32_t* indices = nullptr;  ///< packed index words
  const void* x = nullptr;                 ///< [m][k], weight dtype
  void* y = nullptr;                       ///< [m][n], y_dtype
  int n = 0, k = 0, m = 0;                 ///< problem (m <= 8)
  int tiles = 0;                           ///< tiles per row block
  int row_blocks = 0;                      ///< ceil(n / 16)
  int ksplit = 1;                          ///< CTAs per cluster along k (grid.y)
  int tiles_per_split = 0;                 ///< tiles each split CTA owns
  int tiles_per_phase = 0;                 ///< tiles whose X span fits the shared buffer
  int y_dtype = 0;                         ///< 0 f32, 1 f16, 2 bf16
  int x_vec = 0;                           ///< 1: k % 8 == 0 and x 16-byte aligned (set per run)
  int cta_warps = 8;                       ///< warps (row blocks of 16) per CTA, 1..8 (blockDim = 32 x this)
};

/// How a lane turns its window's indices into A fragments (see spmv_tc_kernel.cuh).
///   kDecShift: per reachable 4-position pair, a 64-bit shift of the value by 16 p - 64 q (any
///              N dividing 16). One fp32 accumulator chain.
///   kDecPrmt:  a byte permute per A register, its selector read from a shared-memory table
///              indexed by the window's index field(s) (N in {1, 2}, M in {8, 16}); two
///              accumulator chains.
///   kDecNone:  no decode (diagnostic only, bench/standalone/spmv_tc_probe.cu; never a plan
///              candidate): each tile's registers are folded into the accumulators with one
///              integer op per register, so the weight stream and the X staging run as in the
///              double-buffer path without the decode, the X reads and the mma; wrong products.
enum : int { kDecShift = 0, kDecPrmt = 1, kDecNone = 2 };

/// Selector-table geometry of the kDecPrmt decode for pattern (pn, pm) with b index bits (0 bytes
/// for kDecShift). A table entry is 16 bytes (4 selector words) per plane, stored in 8 copies so
/// the 8 lanes of a quarter-warp (lane & 7 = copy) read 8 distinct 16-byte bank groups. A PRMT
/// reads only the low 16 bits of its selector; a word holding two selectors gives the second
/// one through IMAD.HI (x 2^16, on the FMA pipe, not the integer ALU).
///   N = 2: one table indexed by both fields of the window (2b bits; both values sit in one
///          32-bit word); M = 8: word r = selector of A register r; M = 16: word q = selectors of
///          registers 2q (low 16 bits) and 2q + 1 (high 16 bits).
///   N = 1, M = 8: the word of chunk c holds row g's value (low half) and row g + 8's (high
///          half), whose fields are adjacent: one table indexed by both (2b bits); word r =
///          selector of row g's register r (low 16 bits) and of row g + 8's (high 16 bits).
///   N = 1, M = 16: two tables (set h: row g + 8h, the value in half h of the word) indexed by
///          the field (b bits); 2 planes of 4 selectors (registers 4 plane + 0..3).
/// byte offset of (set, plane, idx, copy) = (((set * planes + plane) * entries + idx) * 8 + copy) * 16.
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int spmv_tc_table_bytes(int dec, int pn, int pm) {
  if (dec != kDecPrmt) return 0;
  const int b = pm == 16 ? 4 : pm == 8 ? 3 : 2;
  const bool joint = pn == 2 || pm == 8;  // one table over both fields
  const int sets = joint ? 1 : 2, planes = joint ? 1 : 2, entries = 1 << ((joint ? 2 : 1) * b);
  return sets * planes * entries * 8 * 16;
}

/// T: __half or __nv_bfloat16. NN, MM: the pattern (NN divides 16, MM in {4, 8, 16}). DEC: the
/// decode (kDecShift or kDecPrmt). RING: weight tiles each warp keeps in registers (2: the
/// session-3 double buffer; > 2: the register ring of cuda:ew_spmv_tc_ring, tile t + RING is
/// loaded as soon as tile t is decoded, so RING - 1 tiles stay in flight during every decode).
template <class T, int NN_, int MM_, int DEC_ = kDecShift, int RING_ = 2>
struct SpmvTcTraits {
  using Elem = T;
  static constexpr int NN = NN_, MM = MM_, kDec = DEC_, kRing = RING_;
  static constexpr int B = spmv_bits(MM);               // index bits
  static constexpr int kWarps = 8;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowsPerCta = kWarps * 16;
  static constexpr int kSlots = 32;                      // slots per lane per tile
  static constexpr int kChunks = 16 / NN;                // chunks per tile
  static constexpr int kChunkCols = 4 * MM;              // one window per lane of a quad
  static constexpr int kTileCols = kChunks * kChunkCols; // = 64 M / N
  static constexpr int kSteps = MM / 4;                  // mma k16 steps per chunk
  static constexpr int kRegs = MM / 2;                   // half2 registers of one decoded window
  static constexpr int kIdxVec = B % 4 == 0 ? 4 : (B % 2 == 0 ? 2 : 1);
  static constexpr int kIdxLoads = B / kIdxVec;
  // Staged X row pitch in bytes is padded to kPitchMod modulo 128 so a warp's X reads (lane
  // (g, t): row g, window t) are conflict-free: M = 8: one LDS.128 per lane, quarter-warp
  // g in {0,1} x t in 0..3 -> 16-byte groups {0..3} and {4..7}; M = 16: two LDS.128 at 32-byte
  // steps -> groups {0,2,4,6} and {1,3,5,7}; M = 4: one LDS.64, half-warp g in 0..3 -> banks
  // {0..7} + 8g.
  static constexpr int kPitchMod = MM == 4 ? 32 : MM == 8 ? 64 : 16;
  static constexpr int kRedBytes = 8 * kRowsPerCta * 4;  // split-k partials (fp32)
  static constexpr int kAcc = kDec == kDecPrmt ? 2 : 1;   // independent accumulator chains
  // A ring of RING tiles needs ~19-20 registers per tile (2:8): cap at 128 so two 8-warp CTAs
  // (or four 4-warp ones) fit an SM; the double buffer keeps the compiler's choice (76-98; 0 = no
  // minimum: an explicit 1 raises its register use, e.g. prmt 2:8 76 -> 93).
  static constexpr int kMinBlocks = kRing > 2 ? 2 : 0;
  // kDecPrmt tables (see spmv_tc_table_bytes)
  static constexpr bool kTabJoint = NN == 2 || MM == 8;  // one entry per window pair of fields
  static constexpr int kTabSets = kTabJoint ? 1 : 2;
  static constexpr int kTabPlanes = kTabJoint ? 1 : 2;
  static constexpr int kTabEntries = 1 << ((kTabJoint ? 2 : 1) * B);
  static constexpr bool kTabPacked = MM == 16 && NN == 2;
  // ring, 2:8: the entry's 4 selectors packed two per word into 8 bytes (registers 2q, 2q + 1 in
  // word q's low / high 16 bits), read with one LDS.64 (2 shared-memory wavefronts per warp
  // instead of 4 for the LDS.128: 64 instead of 96 wavefronts per 2:8 tile with the X reads);
  // 16 copies of 8 bytes (copy = lane & 15) keep each half-warp wavefront conflict-free. The
  // entry stride stays 128 bytes, so the table is the same 8 KiB.
  static constexpr bool kTab64 = kDec == kDecPrmt && NN == 2 && MM == 8 && kRing > 2;
  static constexpr int kTabCopyBytes = kTab64 ? 8 : 16;  // lane copy stride
  static constexpr int kTabCopyMask = kTab64 ? 15 : 7;
  static constexpr int kTabBytes = spmv_tc_table_bytes(kDec, NN, MM);
  static_assert(16 % NN == 0 && NN < MM, "N must divide 16 and be < M");
  static_assert(kDec == kDecShift || kDec == kDecNone || (kDec == kDecPrmt && (NN == 1 || NN == 2) && (MM == 8 || MM == 16)),
                "the permute decode serves N in {1, 2}, M in {8, 16}");
  static_assert(MM == 4 || MM == 8 || MM == 16, "M in {4, 8, 16}");
  static_assert(kRing >= 2 && kRing <= 6, "2..6 tiles per warp in registers");
};

/// Bytes of one staged X row for `cols` columns (16-bit values), padded as above.
#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr int spmv_tc_pitch(int cols, int pm) {
  const int mod = pm == 4 ? 32 : pm == 8 ? 64 : 16;
  return (cols * 2 + 127) / 128 * 128 + mod;
}

}  // namespace sparsenm::cuda::ew

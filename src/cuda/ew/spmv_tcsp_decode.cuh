// sparsenm — the sparse-tensor-core decode of cuda:ew_spmv_tc_sp (docs/PERF.md, session 8b): the
// ew_spmv_tc_sk tile (same stored bytes, same ring, same X staging) multiplied by
// mma.sp::ordered_metadata.m16n8k32 instead of dense mma.m16n8k16.
//
// Why it fits. Every N:M with N <= 2 and M in {8, 16} is a 2:4 pattern once each window is cut into
// aligned groups of 4 columns: a window holds at most 2 kept values, so no group holds more; groups
// with fewer get explicit zeros. So a window of M columns is M / 4 hardware groups; the sparse mma
// takes half the A registers and half the mma instructions per dense column of the dense form.
//
// Lane roles (m16n8k32 f16/bf16, lane = 4g + t): the A fragment of one k32 step holds rows g and g + 8
// of logical groups t and t + 4 (two 16-bit slots each); the B fragment register i holds X row g at
// logical k 8i + 2t, +1; the metadata word of the step comes from lanes 2 sel + {0, 1} of each quad
// (sel = the mma's sparsity selector): lane 2 sel + H gives groups 4H .. 4H + 3, nibble q = group
// 4H + q, rows g (low half) / g + 8 (high half).
//   Windows -> groups. The tc tile already gives lane t window t of every 4-window chunk (rows g and
//   g + 8), so the A fragment stays local: window t's groups are logical groups t (H = 0) and t + 4
//   (H = 1) of the chunk's step (M = 8: one k32 step per chunk) or of its two steps s (M = 16). Group
//   q = 2s + H of window position p: M = 8: H = (p >> 1) & 1, in-group position lp = 2 (p >> 2) +
//   (p & 1); M = 16: s = (p >> 2) & 1, H = (p >> 1) & 1, lp = 2 (p >> 3) + (p & 1). This physical
//   order makes lane t's B registers two contiguous X vectors per chunk (M = 8: two 8-byte reads,
//   X columns 4t.. and 16 + 4t..; M = 16: two 16-byte reads, columns 8t.. and 32 + 8t.., covering both
//   steps), so X is staged exactly as for tc_sk (linear, pitch spmv_tc_pitch(cols, M / 2)).
//   A registers: one PRMT of the 32-bit word holding the window's value(s) per (row, group), its
//   selector from a shared-memory table indexed by the window's index field(s) (as tc_sk).
//   Metadata: the table word of group q also carries, in its high 16 bits, a nibble already shifted
//   to its final place (4t), but of group q ^ t (M = 16) or q ^ (t & 1) (M = 8): so with one PRMT per
//   slot joining rows g / g + 8, lane t's slot x of a step pair is exactly what lane t ^ x needs, and
//   the quad's metadata words are slot 0 | shfl_xor(slot 1, 1) | shfl_xor(slot 2, 2) | shfl_xor(slot
//   3, 3) (M = 8: the two steps are two chunks, so the step half of the swap is a select).
//   Nibbles: ordered metadata (idx0 < idx1); a group with one value puts the zero slot at 3 (or at 0
//   when the value sits at 3); an empty group is zeros at (0, 1). Index fields that are not strictly
//   ascending (only the tc layout's zero padding: value 0, index 0) decode as an empty window.
// Tables (one 128-byte line per entry: 16 copies of 8 bytes for 2:8 (LDS.64, copy = lane & 15), else 8
// copies of 16 bytes (LDS.128, copy = lane & 7); the copy fixes t, so nibbles are pre-shifted):
//   2:8  per row, 6-bit index (both fields), 2 words (groups 0, 1)                  64 entries,  8 KiB
//   1:8  joint rows g / g + 8, 6-bit index, 4 words (row 0 groups 0, 1, row 1 ...)  64 entries,  8 KiB
//   2:16 per row, 8-bit index, 4 words (groups 0..3)                                256 entries, 32 KiB
//   1:16 per row h (set h: the value in half h of the word), 4-bit index, 4 words   2 x 16,      4 KiB
// NaN / Inf: zero slots multiply X at real positions, so X must be finite (desc.x_finite), as tc_sk.
// SASS (sm_90a, f16; per tile, tc_sk -> tc_sp): HMMA 16 -> 8 (2:8), 32 -> 16 (1:8, 2:16), 64 -> 32 (1:16);
//   all instructions about equal (2:8 653 -> 646, 1:8 843 -> 882, 2:16 771 -> 760, 1:16 979 -> 1049 in the
//   loop): the metadata exchange (3 SHFL + 2 LOP3 + 4 PRMT per step pair, + 4 SEL at M = 8) and the B
//   register moves (b0 / b1 come from different windows) eat the saved PRMT / IMAD.HI. 90-113 registers.
// Measured: not yet (the session-8b device call stopped in the build; docs/PERF.md "Session 8b"); the
//   CPU emulation test (EwSpmvTcSpHost.EmulatedTileMatchesTheOracle) runs this decode on the host.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/ew/spmv_tc_kernel.cuh"

namespace sparsenm::cuda::ew::tcsp {

#if defined(__CUDACC__)
#define SPARSENM_TCSP_HD __host__ __device__
#else
#define SPARSENM_TCSP_HD
#endif

/// Bytes of the table of pattern pn:pm (0: not served).
SPARSENM_TCSP_HD constexpr int table_bytes(int pn, int pm) {
  if (pn == 2 && pm == 8) return 64 * 128;
  if (pn == 1 && pm == 8) return 64 * 128;
  if (pn == 2 && pm == 16) return 256 * 128;
  if (pn == 1 && pm == 16) return 32 * 128;
  return 0;
}
/// Bytes of one lane copy of an entry (8: LDS.64 for 2:8; else 16).
SPARSENM_TCSP_HD constexpr int copy_bytes(int pn, int pm) { return pn == 2 && pm == 8 ? 8 : 16; }

/// Group (2s + H) and in-group position of window position p.
SPARSENM_TCSP_HD constexpr int group_of(int pm, int p) { return pm == 8 ? ((p >> 1) & 1) : 2 * ((p >> 2) & 1) + ((p >> 1) & 1); }
SPARSENM_TCSP_HD constexpr int lpos_of(int pm, int p) { return pm == 8 ? 2 * (p >> 2) + (p & 1) : 2 * (p >> 3) + (p & 1); }

/// PRMT selector byte pair of one 16-bit slot: from half `src` (0, 1) of the word, or zero (src < 0).
SPARSENM_TCSP_HD constexpr std::uint32_t half_sel(int src) {
  return src < 0 ? 0x44u : std::uint32_t(2 * src) | (std::uint32_t(2 * src + 1) << 4);
}

/// Selector (16 bits) and ordered nibble of group q of one row's window whose nv values sit at
/// positions pos[] (ascending) in word halves src[].
SPARSENM_TCSP_HD constexpr void group_code(int pm, int q, const int* pos, const int* src, int nv, std::uint32_t& sel,
                                           std::uint32_t& nib) {
  // the (at most two) values of the window in group q, in position order (scalars: no local array)
  const bool in0 = nv > 0 && group_of(pm, pos[0]) == q, in1 = nv > 1 && group_of(pm, pos[1]) == q;
  const int c = int(in0) + int(in1);
  const int lpa = in0 ? lpos_of(pm, pos[0]) : lpos_of(pm, pos[1]), sa = in0 ? src[0] : src[1];
  const int lpb = lpos_of(pm, pos[1]), sb = src[1];
  int i0 = 0, i1 = 1, s0 = -1, s1 = -1;
  if (c == 2) {
    i0 = lpa, i1 = lpb, s0 = sa, s1 = sb;
  } else if (c == 1) {
    if (lpa < 3) i0 = lpa, i1 = 3, s0 = sa;
    else i0 = 0, i1 = 3, s1 = sa;
  }
  nib = std::uint32_t(i0) | (std::uint32_t(i1) << 2);
  sel = half_sel(s0) | (half_sel(s1) << 8);
}

/// Word w (0 .. copy_bytes / 4 - 1) of entry e, lane copy `copy` (see the header comment).
SPARSENM_TCSP_HD constexpr std::uint32_t table_word(int pn, int pm, int e, int copy, int w) {
  const int t = copy & 3;
  const int b = pm == 16 ? 4 : 3;
  int h = 0, q = w, nv = 0, pos[2] = {0, 0}, src[2] = {0, 1};
  int swap = pm == 16 ? t : (t & 1);
  if (pn == 2) {
    const int p0 = e & ((1 << b) - 1), p1 = e >> b;
    if (p0 < p1) nv = 2, pos[0] = p0, pos[1] = p1;
  } else if (pm == 8) {  // joint: word 2h + q; field h of the index is row h's position, value in half h
    h = w >> 1, q = w & 1;
    nv = 1, pos[0] = (e >> (b * h)) & ((1 << b) - 1), src[0] = h;
  } else {  // 1:16: entry e = set h x 16 + position
    h = e >> 4;
    nv = 1, pos[0] = e & 15, src[0] = h;
  }
  std::uint32_t sel = 0, nib = 0, dummy = 0;
  group_code(pm, q, pos, src, nv, sel, dummy);
  group_code(pm, q ^ swap, pos, src, nv, dummy, nib);
  return sel | ((nib << (4 * t)) << 16);
}

/// The primitives of the decode on the device (the CPU test substitutes byte-level emulations, so
/// unit_operands itself runs on the host there).
struct DeviceOps {
#if defined(__CUDACC__)
  __device__ static std::uint32_t prmt0(std::uint32_t w, std::uint32_t sel) {
    std::uint32_t d;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(d) : "r"(w), "r"(sel));
    return d;
  }
  /// High halves of a (low) and b (high): the two rows' metadata pieces in place.
  __device__ static std::uint32_t hi_halves(std::uint32_t a, std::uint32_t b) {
    std::uint32_t d;
    asm("prmt.b32 %0, %1, %2, 0x7632;" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  /// Shared-memory vector loads through plain pointers into the dynamic shared array, so the compiler
  /// emits LDS [R + UR] (the array base in a uniform register) without a per-lookup address add.
  __device__ static uint4 ld4(const unsigned char* p) { return *reinterpret_cast<const uint4*>(p); }
  __device__ static uint2 ld2(const unsigned char* p) { return *reinterpret_cast<const uint2*>(p); }
#endif
};

/// Units of a tile: k32 step pairs (M = 8: chunks 2u, 2u + 1; M = 16: chunk u).
template <class Tr>
inline constexpr int kUnitsPerTile = Tr::MM == 8 ? Tr::kChunks / 2 : Tr::kChunks;

/// One lane's operands of unit u of a tile: A[s] / Bx[s] the A and B fragments of step s (selector s), S
/// the four metadata slots: the step-s_t metadata word of lane t is S[0] | (S[1] of lane t ^ 1) | (S[2]
/// of lane t ^ 2) | (S[3] of lane t ^ 3). xw, tab, co, t: as compute_tile.
#pragma nv_exec_check_disable
template <class Tr, class Tile, class Ops = DeviceOps>
SPARSENM_TCSP_HD __forceinline__ void unit_operands(const Tile& tile, int u, const unsigned char* xw, const unsigned char* tab,
                                                    std::uint32_t co, int t, std::uint32_t (&A)[2][4],
                                                    std::uint32_t (&Bx)[2][4], std::uint32_t (&S)[4]) {
  constexpr int N = Tr::NN, M = Tr::MM, B = Tr::B;
  if constexpr (M == 8) {
    std::uint32_t K[2][2];
SPARSENM_TC_UNROLL
    for (int s = 0; s < 2; ++s) {
      const int c = 2 * u + s;
      const uint2 lo = Ops::ld2(xw + c * 64), hi = Ops::ld2(xw + c * 64 + 32);
      Bx[s][0] = lo.x, Bx[s][1] = hi.x, Bx[s][2] = lo.y, Bx[s][3] = hi.y;
      std::uint32_t E[2][2] = {}, wd[2] = {};
      if constexpr (N == 2) {
SPARSENM_TC_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int j = c * 4 + h * 2;
          wd[h] = tile.v[j >> 1];
          const uint2 e = Ops::ld2(tab + (tc_detail::field128<B, 2 * B>(tile.i, j * B) | co));
          E[h][0] = e.x, E[h][1] = e.y;
        }
      } else {
        const int j = c * 2;
        wd[0] = wd[1] = tile.v[c];
        const uint4 e = Ops::ld4(tab + (tc_detail::field128<B, 2 * B>(tile.i, j * B) | co));
        E[0][0] = e.x, E[0][1] = e.y, E[1][0] = e.z, E[1][1] = e.w;
      }
      A[s][0] = Ops::prmt0(wd[0], E[0][0]);
      A[s][1] = Ops::prmt0(wd[1], E[1][0]);
      A[s][2] = Ops::prmt0(wd[0], E[0][1]);
      A[s][3] = Ops::prmt0(wd[1], E[1][1]);
      K[s][0] = Ops::hi_halves(E[0][0], E[1][0]);
      K[s][1] = Ops::hi_halves(E[0][1], E[1][1]);
    }
    const bool s_hi = (t >> 1) != 0;  // this lane gives the metadata of the pair's second step
    S[0] = s_hi ? K[1][0] : K[0][0];
    S[1] = s_hi ? K[1][1] : K[0][1];
    S[2] = s_hi ? K[0][0] : K[1][0];
    S[3] = s_hi ? K[0][1] : K[1][1];
  } else {
    const int c = u;
    const uint4 q0 = Ops::ld4(xw + c * 128), q1 = Ops::ld4(xw + c * 128 + 64);
    Bx[0][0] = q0.x, Bx[0][1] = q1.x, Bx[0][2] = q0.y, Bx[0][3] = q1.y;
    Bx[1][0] = q0.z, Bx[1][1] = q1.z, Bx[1][2] = q0.w, Bx[1][3] = q1.w;
    std::uint32_t E[2][4] = {}, wd[2] = {};
SPARSENM_TC_UNROLL
    for (int h = 0; h < 2; ++h) {
      uint4 e;
      if constexpr (N == 2) {
        const int j = c * 4 + h * 2;
        wd[h] = tile.v[j >> 1];
        e = Ops::ld4(tab + (tc_detail::field128<B, 2 * B>(tile.i, j * B) | co));
      } else {
        const int j = c * 2 + h;
        wd[h] = tile.v[c];
        e = Ops::ld4(tab + h * 16 * 128 + (tc_detail::field128<B, B>(tile.i, j * B) | co));
      }
      E[h][0] = e.x, E[h][1] = e.y, E[h][2] = e.z, E[h][3] = e.w;
    }
SPARSENM_TC_UNROLL
    for (int w = 0; w < 4; ++w) S[w] = Ops::hi_halves(E[0][w], E[1][w]);
SPARSENM_TC_UNROLL
    for (int s = 0; s < 2; ++s) {
      A[s][0] = Ops::prmt0(wd[0], E[0][2 * s]);
      A[s][1] = Ops::prmt0(wd[1], E[1][2 * s]);
      A[s][2] = Ops::prmt0(wd[0], E[0][2 * s + 1]);
      A[s][3] = Ops::prmt0(wd[1], E[1][2 * s + 1]);
    }
  }
}

#if defined(__CUDACC__)

template <class T, int SEL>
__device__ __forceinline__ void mma_sp(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[4], std::uint32_t e) {
  static_assert(SEL == 0 || SEL == 1, "sparsity selector 0 or 1 (f16 / bf16 m16n8k32)");
  if constexpr (std::is_same_v<T, __half>)
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, %13;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), "n"(SEL));
  else
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, %13;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e), "n"(SEL));
}

/// Fills the table (Tr::kTabBytes at `base`); every thread of the CTA takes part; the caller syncs.
template <class Tr>
__device__ __forceinline__ void fill_table(unsigned char* base) {
  constexpr int kWordsPerCopy = Tr::kTabCopyBytes / 4;
  for (int i = threadIdx.x; i < Tr::kTabBytes / 4; i += int(blockDim.x)) {
    const int e = i >> 5, copy = (i & 31) / kWordsPerCopy, w = i % kWordsPerCopy;
    reinterpret_cast<std::uint32_t*>(base)[i] = table_word(Tr::NN, Tr::MM, e, copy, w);
  }
}

/// acc += the tile's 16 rows x (its columns) times X^T on the sparse tensor cores. xw: staged X row g at
/// the lane's column of the tile's first chunk (4t (M = 8) / 8t (M = 16) columns in); tab: the table
/// (shared memory), co: this lane's copy offset (ORed into the entry offset: one LOP3 per lookup, the
/// base goes into the LDS's uniform-register operand); t: lane & 3.
template <class Tr, class Tile>
__device__ __forceinline__ void compute_tile(const Tile& tile, float (&acc)[2][4], const unsigned char* xw,
                                             const unsigned char* tab, std::uint32_t co, int t) {
  using T = typename Tr::Elem;
#pragma unroll
  for (int u = 0; u < kUnitsPerTile<Tr>; ++u) {
    std::uint32_t A[2][4], Bx[2][4], S[4];
    unit_operands<Tr>(tile, u, xw, tab, co, t, A, Bx, S);
    const std::uint32_t meta = S[0] | __shfl_xor_sync(0xffffffffu, S[1], 1) | __shfl_xor_sync(0xffffffffu, S[2], 2) |
                               __shfl_xor_sync(0xffffffffu, S[3], 3);
    mma_sp<T, 0>(acc[0], A[0], Bx[0], meta);
    mma_sp<T, 1>(acc[1], A[1], Bx[1], meta);
  }
}

#endif  // __CUDACC__


}  // namespace sparsenm::cuda::ew::tcsp

// sparsenm — EW-N:M SpMV for m = 1 (LLM decode), "stream-K" form: cuda:ew_spmv_sk (docs/PERF.md,
// ew_spmv session 5). Same packed weight as ew_spmv (spmv_layout.hpp: 32-row groups, lane = row,
// 32-slot tiles of 16-byte value vectors + index words, two tiles in flight per warp in registers),
// different work split and X path:
//
// Why (the argument for this design; ew_spmv's time is floor + a near-constant 7-8 µs):
//  * Work: the row groups x tiles of the whole weight are one flattened sequence of "units" (unit u =
//    group u / tiles, tile u % tiles, which is exactly global tile u of the packed layout). Warp w of
//    the grid takes units [w U / W, (w + 1) U / W): every warp streams the same number of tiles (±1),
//    and the grid is a whole number of CTAs per SM (sms x occupancy), so every SM carries the same
//    bytes. ew_spmv's one-wave grid has 3 or 4 CTAs per SM (448 CTAs for 528 slots at 28672 x 8192)
//    and a k-split chosen per shape. (Measured afterwards: that grid streams as fast as a plain
//    read, so the balance is not where this kernel gains; docs/PERF.md, ew_spmv session 5.)
//  * Split-k without clusters: a warp's range covers whole groups (stored straight to Y) and at most
//    two partial groups (its first and its last). Partials are added to an fp32 workspace (one RED
//    per lane) and counted per group (tiles contributed); the contributor whose count completes the
//    group reads the sum back with atomicExch (which also resets the workspace to 0) and writes Y.
//    The flushes happen once, after the warp's last tile: no fence in the streaming loop, no cluster,
//    no DSMEM barrier. The workspace and counters are zero between launches (self-resetting).
//  * X: the CTA's warps may touch any column, so the whole X row (fp16 / bf16, kept in the weight
//    dtype: at m = 1 one conversion per slot is within budget) is brought into shared memory by ONE
//    `cp.async.bulk` issued by one thread, completing on an mbarrier; each warp waits on the mbarrier
//    only before its first tile's products (its first two tiles are already requested). No per-thread
//    staging loop and no CTA barrier between the weight requests and the first products. X beyond
//    the last 16-byte multiple of k (and the zero padding up to the last window of the last tile)
//    is written by the threads before the one __syncthreads that follows the mbarrier init.
//    A misaligned X pointer falls back to the threads' copy (the bulk size is 0).
// Measured (H200, 20d8a0f, fp16 m = 1, 28672 x 8192 and 12288^2 at 2:8 / 1:8 / 2:16): 0.3-1.8 us
//   faster than ew_spmv in every case (the cluster reduction it avoids costs 1.6-3.7 us; its own end
//   chain of L2 round trips costs 1.1-2.1 us); 4 waves are 10-27 % slower (whole X staged per CTA
//   again), so "cuda:ew_spmv_sk4" is opt-in.
// Shared-memory reads of X: all lanes read slot j of their rows, which lies in one M-window, i.e.
//   in M consecutive 2-byte columns: conflict-free (at most M / 2 distinct words, broadcast).
// Limits: k * 2 bytes of X per CTA (<= 96 KiB here), the patterns of spmv_sk_instances.def compiled
//   (N, M folded in).
// N not dividing 32 (session 10h, 3:32; docs/PERF.md "Session 10h (s10sk332)"): the packed layout cuts
//   a row's slots into 32-slot tiles whatever N is, so at N = 3 a tile starts mid-window: tile t's first
//   slot 32 t lies in window w0 = 32 t / N at offset rem = 32 t - N w0, and slot j in window
//   w0 + (rem + j) / N. rem takes N / gcd(32, N) values (0, 2, 1 at N = 3), so the products are compiled
//   once per value (SkTraits::kPhases copies, REM a template argument: the window offset stays an LDS
//   immediate, nothing per slot is added) and the tile picks its copy with a warp-uniform branch on rem
//   (one multiply-high division per tile). X in shared memory covers ceil(32 tiles / N) windows, so the
//   zero slots that pad the last tile read zeros past k. N | 32: one phase, the code of before.
//   Measured (H200, 949e5ba, m = 1 3:32): the plan's skw / skrg 18.0 us (76 % of copy bandwidth) at 28672 x 8192
//   and 14.1 us (62 %) at 12288^2, against 23.3 / 22.0 us for the CUDA-core ew_spmv.
// RING (session 6, docs/PERF.md): 0 = the shipped two-tile register ring above. RING = 3 / 4: each
//   warp owns a ring of RING tiles in shared memory after X (SkArgs::ring_off), filled by per-lane
//   16-byte `cp.async.cg` (L2 only, one commit group per tile) in the packed layout's own order, so
//   a lane copies exactly the value vectors it reads back; the products read the tile with LDS.128
//   (values) / LDS.32-128 (index words). While tile q is multiplied, tiles q+1 .. q+RING-1 are in
//   flight, and their requests were issued before tile q's products, not after them. One
//   __syncwarp per tile (after the lane's wait_group) both publishes the other lanes' index chunks
//   and retires the stage read in the previous step before it is refilled. Everything else
//   (unit split, X bulk copy, end flushes) is the shipped kernel's. cp.async is sm_80: no guard.
// IREG (session 7, docs/PERF.md; "cuda:ew_spmv_skv" = RING 3 + IREG, opt-in: measured no faster than
//   skr / sk in any bar case, the third CTA per SM bought nothing at k = 12288): the ring stages
//   hold the value vectors only (2048 B per tile instead of 2048 + b x 128), and the lane's b index
//   words of tile q + RING - 1 are loaded straight into registers (LDG, evict-first) when that tile's
//   values are requested, into a register set of RING slots (slot = stage = q % RING, compile-time
//   after the loop is unrolled by RING, so no register is moved while its load is pending).
//   Why: at X = 24 KiB (k = 12288) the full ring costs 58 KB per CTA and only 2 CTAs (16 warps) fit an
//   SM; values only, 48 KB + X -> 3 CTAs (24 warps): 1.5x the bytes in flight per SM, and the index
//   words in flight as early as the values. A lane reads back only the value vectors it copied itself,
//   so no __syncwarp: its cp.async.wait_group covers its own copies, and the stage it refills was last
//   read by its own LDS one step earlier (shared-memory instructions of a warp execute in order).
// WARPS (session 7, "cuda:ew_spmv_skw" = IREG, RING 3, 32 warps): one CTA of 32 warps per SM instead
//   of 3 of 8: X is held once per SM (24 KiB instead of 72 at k = 12288), which leaves room for 32
//   warps x 3 value stages (192 KiB): 64 tiles in flight per SM instead of 48, and 32 warps to hide
//   the products. The unit split is per warp, so nothing else changes. Measured (H200, 3105dde):
//   raced; the fastest form at 12288^2 1:8 / 2:16 (-0.7 / -1.0 us vs skr), not at 2:8.
// GRID (session 7b, docs/PERF.md; "cuda:ew_spmv_skg" / "_skrg" / "_skwg" = sk / skr / skw with GRID):
//   the weight is stored in the order the grid consumes it (format/sk_grid_order.hpp, reordered once
//   at plan time for the planned grid W): the tile of step q of warp w at slot q W + w (q < lmin =
//   U / W), the long warps' last tile densely after those (slot lmin W + number of long warps before
//   w = lmin W + u0 - w lmin). Only a step's address changes (SK_AT: one compare, select and IMAD in
//   32 bits, the plan admits < 2^31 tiles); the unit split, the (group, tile) walk, the head / tail
//   partials and their flushes are the packed-order kernel's, so the grid order is exact for any W.
//   Why: in the packed order the ~4200 warps' outstanding requests lie in ~4200 tiles ~18 KB apart;
//   in the grid order neighbouring warps read adjacent tiles at the same step, one compact window, as
//   a plain grid-stride read does. Measured (H200, 596e0cf, probe): a pure read on sk's grid is
//   1.0-1.5 us faster in the grid order than in the range order (12288^2 2:8: 23.6 vs 25.2 us, faster
//   than the plain read, 24.4), but the kernels' own streams gain only 0.2-0.6 us and the full forms
//   -0.8 .. +0.6 us (ring forms; the register form +0.1 .. +1.2 us slower: its warps drift apart with
//   the products, so the same step is no longer the same instant). skrg / skwg raced, skg opt-in.
// V:2:M (session 7, VM = M > 0: "cuda:vnm_spmv_sk" with RING = 0, "cuda:vnm_spmv_skr" with RING = 3;
//   docs/PERF-vnm-small.md): a venom V:2:M weight read in its own bytes instead of as element 2:M
//   (format/as_element.hpp: 1 - 2 more index bits per value, +5.3 % / +10.7 % bytes at M = 8 / 16).
//   Layout (format/vnm_sk_pack.hpp): the 2:4 tile of this kernel (B = 2: the canonical 2-bit
//   position among the window's 4 selected columns) plus, per (slab of V rows, tile), a 32-byte
//   column table (byte L: two in-window columns, nibbles); +0.1 % bytes over V:2:8 at V = 128.
//   Why it is exact and cheap: V % 32 == 0, so a warp's 32 rows lie in one slab and share the
//   selected columns; slot j of every lane lies in window j / 2 of the tile. Per tile the warp
//   gathers the 64 selected X values (16 windows x 4) from the shared X into a warp-private 256-byte
//   buffer, as fp32 (lane L: window L / 2, positions 2 (L % 2) + {0, 1}: two LDS.U16, two
//   conversions, one STS.64), one __syncwarp, and then runs the 2:4 products with that buffer as X:
//   the slot's 2-bit field picks one of the window's 4 floats (LDS.32, no conversion per slot, so
//   the gather pays for itself: 32 fewer HADD2 per tile at f16). Two buffers alternate, so that one
//   __syncwarp also retires the previous tile's reads; conflicts: the STS.64 is two words per lane
//   (none), the gather's LDS touch 16 windows x M columns (at most 2-way at M = 8 / 16), the
//   products read 4 floats of one window (broadcast). The table rides with
//   the tile: one LDG.U8 per lane beside the tile's loads (register form; it is read by the slab's
//   V / 32 warps, so not evict-first), or one 32-byte chunk (lanes 0 and 1) after the index words
//   of the ring stage; its address comes from a cursor that steps with the fetches (TabCursor, no
//   division per tile). Limits: V % 32 == 0, M <= 16 (nibbles), f16 / bf16.
//   Measured (H200, 967dc60, fp16 m = 1, 128:2:8 / 128:2:16 at 28672 x 8192 and 12288^2): the same
//   time as the element form at M = 8 (-0.3 .. +1.0 us), 0.2-0.6 us faster at M = 16, not the 4 / 9 %
//   its fewer bytes per tile predicted: the per-warp tiles in flight, not the bytes, set the pace
//   (docs/PERF-vnm-small.md, session 7). Both forms race in the plan.
// Diagnostic knobs (bench/standalone/spmv_probe.cu only, never a plan candidate): XM = kSkXLoop
// (threads copy X + __syncthreads), kSkXNone (no X: the products use 1.0); COMPUTE = false (the
// tiles are folded with XOR, no decode).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ew/spmv_kernel.cuh"
#include "cuda/ew/stream_tile.cuh"

namespace sparsenm::cuda::ew {

constexpr int kSkXBulk = 0, kSkXLoop = 1, kSkXNone = 2;
/// End of a warp's range: kSkEndSerial (shipped, session 5) runs the head and open-group flushes one
/// after the other (up to 6 dependent L2 round trips). kSkEndPar (probe variant "sk-par", not
/// shipped: measured no faster, docs/PERF.md session 5b) adds the head partial to the workspace as
/// soon as the head group closes in the loop (a RED nothing waits on), then ends with ONE acq_rel
/// fence, both group counters bumped by one ATOM of two lanes, and both read-backs in flight
/// together (3 dependent round trips).
/// Session 10 (s10m1, docs/PERF.md "Session 10 (s10m1) measured"): tc_sk's lean settle in this flush (16-byte
/// REDs, plain read-back by the completer; a called function taking SkArgs by reference, which added 2-4 parameter
/// loads to its chain) measured 0.3-2.4 us slower in every bar case; removed (code at a2fe3e2).
constexpr int kSkEndSerial = 0, kSkEndPar = 1;

/// Arguments of one launch (sizes in elements).
struct SkArgs {
  const void* values = nullptr;
  const std::uint32_t* indices = nullptr;
  const void* x = nullptr;  ///< [k], weight dtype
  void* y = nullptr;        ///< [n], y_dtype
  float* ws = nullptr;      ///< [row_groups * 32] fp32, zero between launches
  unsigned* cnt = nullptr;  ///< [row_groups], zero between launches
  int n = 0, k = 0;
  int tiles = 0, row_groups = 0;
  long long units = 0;      ///< row_groups * tiles
  int warps_total = 0;      ///< grid * warps per CTA
  int x_cols = 0;           ///< columns held in shared memory (k rounded up to the last tile's window end)
  int x_bulk = 0;           ///< bytes of X brought by the bulk copy (multiple of 16; 0: threads copy all)
  int y_dtype = 0;          ///< 0 f32, 1 f16, 2 bf16
  int ring_off = 0;         ///< byte offset of the tile rings in dynamic shared memory (RING > 0)
  // The native V:2:M form (SkTraits::VM > 0; format/vnm_sk_pack.hpp). Unused (and last, so the
  // element instances' parameter offsets are unchanged) otherwise.
  const unsigned char* tab = nullptr;  ///< [slabs][tiles][32] column tables
  int slab_groups = 0;                 ///< row groups per slab (V / 32)
  int gather_off = 0;                  ///< byte offset of the warps' gather buffers in dynamic shared memory
  // The grid-ordered layout (SkTraits::GRID; format/sk_grid_order.hpp). Unused otherwise.
  long long grid_lmin = 0;  ///< units / warps_total: the steps every warp takes (the shorter range length)
};

template <class T, int B_, int NN_, int MM_, int XM_ = kSkXBulk, bool COMPUTE_ = true, int END_ = kSkEndSerial,
          int RING_ = 0, int LEAN_ = -1, int VM_ = 0, bool IREG_ = false, int WARPS_ = 8, bool GRID_ = false>
struct SkTraits {
  using Elem = T;
  static constexpr int B = B_, NN = NN_, MM = MM_, XM = XM_, END = END_, RING = RING_;
  /// VM > 0: the native V:2:VM form (header comment, "V:2:M"): the tile is the 2:4 tile over the
  /// gathered columns (B = 2, NN = 2, MM = 4) plus the slab's 32-byte column table.
  static constexpr int VM = VM_;
  /// Index words through registers, ring stages of values only (RING > 0; element form only).
  static constexpr bool IREG = IREG_;
  /// Tiles stored in the order the grid consumes them (header comment, "GRID"): only the address of
  /// a unit changes, the unit split and the logical (group, tile) walk are the same.
  static constexpr bool GRID = GRID_;
  static_assert(!IREG_ || VM_ == 0, "the value ring serves the element form");
  /// Products with the X address built once per tile (LEAN, default: on with the shared-memory ring,
  /// off in the shipped register form; the probe crosses both).
  static constexpr bool LEAN = LEAN_ < 0 ? RING_ > 0 : LEAN_ > 0;
  static constexpr bool kCompute = COMPUTE_;
  /// Warps per CTA: 8 (4 CTAs / SM requested of ptxas: <= 64 registers) or, for the value ring, one
  /// CTA of up to 32 warps per SM (one copy of X per SM instead of 3-4; session 7).
  static constexpr int kWarps = WARPS_, kThreads = 32 * WARPS_, kSlots = 32;
  static constexpr int kMinBlocks = WARPS_ == 8 ? 4 : 1;
  static_assert(WARPS_ == 8 || (IREG_ && WARPS_ > 0 && WARPS_ <= 32), "wide CTAs go with the value ring");
  static constexpr int kVecs = kSlots * int(sizeof(T)) / 16;
  static constexpr int kIdxVec = B % 4 == 0 ? 4 : (B % 2 == 0 ? 2 : 1);
  static constexpr int kIdxLoads = B / kIdxVec;
  static_assert(sizeof(T) == 2, "ew_spmv_sk serves f16 / bf16");
  /// Window phases of a tile (header comment, "N not dividing 32"): 1 when N | 32 (every tile starts
  /// a window); else the offset of a tile's first slot in its window, (32 t) mod N, takes kPhases
  /// values (multiples of gcd(32, N)), each with its own compile-time products (3 at N = 3).
  static constexpr int kPhaseStep = NN_ % 32 == 0 ? 32 : (NN_ % 16 == 0 ? 16 : (NN_ % 8 == 0 ? 8 : (NN_ % 4 == 0 ? 4 : (NN_ % 2 == 0 ? 2 : 1))));
  static constexpr int kPhases = NN_ / (kPhaseStep < NN_ ? kPhaseStep : NN_);
  static_assert(NN > 0 && NN <= kSlots && (kSlots % NN == 0 || kPhases <= 4),
                "N must divide the 32-slot tile, or have at most 4 window phases (code per phase)");
  static_assert(RING == 0 || RING >= 2, "a shared-memory ring needs at least two stages");
  static_assert(!IREG || RING > 0, "register index words go with a shared-memory value ring");
  static constexpr int kValBytes = kVecs * 32 * 16;          ///< one tile's value vectors (contiguous)
  static constexpr int kIdxBytes = B * 32 * 4;               ///< one tile's index words (contiguous)
  static constexpr int kTabBytes = VM > 0 ? 32 : 0;          ///< one tile's column table (VM > 0)
  static constexpr int kTileBytes = IREG ? kValBytes : kValBytes + kIdxBytes + kTabBytes;  ///< one ring stage
  static constexpr int kGatherBytes = VM > 0 ? 2 * 64 * 4 : 0;         ///< per warp: two 64-float buffers
  static_assert(VM == 0 || (NN == 2 && MM == 4 && B == 2 && VM <= 16 && XM != kSkXNone && COMPUTE_),
                "the V:2:M form runs the 2:4 products over gathered columns, M <= 16");
  static constexpr int kIdxChunks = kIdxBytes / 16;          ///< 16-byte copies of the index words
};

/// The native V:2:M instance (VM = M): the 2:4 tile (B = 2, N = 2, M = 4) over gathered columns.
template <class T, int VM, int RING>
using VnmSkTraits = SkTraits<T, 2, 2, 4, kSkXBulk, true, kSkEndSerial, RING, -1, VM>;

namespace sk {

template <class Tr>
struct Tile {
  std::uint32_t v[Tr::kVecs * 4];
  std::uint32_t i[Tr::B];
  std::uint32_t c;  ///< VM > 0: the lane's table byte (two in-window columns); unused otherwise
};

/// VM > 0: where the column table of the next unit to fetch lies. Every warp fetches its units in
/// order, so the cursor only steps (no division per tile): +32 B per tile, back to the slab's
/// first table at the end of a row group unless the next group starts a new slab.
struct TabCursor {
  unsigned off = 0;   ///< byte offset of the table (the tables are < 4 GiB: checked at plan time)
  int t = 0, gi = 0;  ///< tile in the row, row group within the slab
  __device__ __forceinline__ void init(const SkArgs& a, long long u) {
    const long long g = u / a.tiles, slab = g / a.slab_groups;
    t = int(u - g * a.tiles);
    gi = int(g - slab * a.slab_groups);
    off = unsigned((slab * a.tiles + t) * 32);
  }
  __device__ __forceinline__ void step(const SkArgs& a) {
    off += 32u;
    if (++t == a.tiles) {
      t = 0;
      if (++gi == a.slab_groups) gi = 0;
      else off -= unsigned(a.tiles) * 32u;
    }
  }
};

template <class Tr>
__device__ __forceinline__ void load(Tile<Tr>& t, const SkArgs& a, long long u, int lane, TabCursor& cur) {
  load_stream_tile<Tr::kVecs, Tr::kIdxLoads, Tr::kIdxVec>(t.v, t.i, a.values, a.indices, std::size_t(u), lane);
  if constexpr (Tr::VM > 0) {
    t.c = __ldg(a.tab + cur.off + lane);  // read by the slab's V / 32 warps: not evict-first
    cur.step(a);
  }
}

/// Ring stage fill: the lane's 16-byte cp.async copies of global tile u (values: the lane's own
/// vectors; index words: chunks lane, lane + 32, ...), issued into stage address `st`.
template <class Tr>
__device__ __forceinline__ void ring_issue(unsigned st, const SkArgs& a, long long u, int lane, TabCursor& cur) {
  const char* gv = static_cast<const char*>(a.values) + std::size_t(u) * Tr::kValBytes;
  const char* gi = reinterpret_cast<const char*>(a.indices) + std::size_t(u) * Tr::kIdxBytes;
#pragma unroll
  for (int q = 0; q < Tr::kVecs; ++q) {
    const int o = (q * 32 + lane) * 16;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(st + unsigned(o)), "l"(gv + o) : "memory");
  }
#pragma unroll
  for (int c0 = 0; c0 < (Tr::IREG ? 0 : Tr::kIdxChunks); c0 += 32) {
    const int c = c0 + lane;
    if (Tr::kIdxChunks % 32 == 0 || c < Tr::kIdxChunks)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(st + unsigned(Tr::kValBytes + c * 16)),
                   "l"(gi + c * 16)
                   : "memory");
  }
  if constexpr (Tr::VM > 0) {  // the 32-byte column table: lanes 0 and 1, after the index words
    if (lane < 2)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(st + unsigned(Tr::kValBytes + Tr::kIdxBytes + lane * 16)),
                   "l"(a.tab + cur.off + lane * 16)
                   : "memory");
    cur.step(a);
  }
}
__device__ __forceinline__ void ring_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void ring_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

/// Reads a ring stage (generic pointer into shared memory) into the lane's registers, in the
/// register kernel's Tile form: the same products follow.
template <class Tr>
__device__ __forceinline__ void ring_read(Tile<Tr>& t, const unsigned char* st, int lane) {
  const uint4* vp = reinterpret_cast<const uint4*>(st) + lane;
#pragma unroll
  for (int q = 0; q < Tr::kVecs; ++q) {
    const uint4 u = vp[q * 32];
    t.v[4 * q] = u.x, t.v[4 * q + 1] = u.y, t.v[4 * q + 2] = u.z, t.v[4 * q + 3] = u.w;
  }
  if constexpr (Tr::IREG) return;  // the index words are in registers already
  const std::uint32_t* ip = reinterpret_cast<const std::uint32_t*>(st + Tr::kValBytes) + lane * Tr::kIdxVec;
  read_stage_indices<Tr::kIdxLoads, Tr::kIdxVec>(t.i, ip);
  if constexpr (Tr::VM > 0) t.c = st[Tr::kValBytes + Tr::kIdxBytes + lane];
}

/// IREG: the lane's index words of global tile u into registers (the load_stream_tile order).
template <class Tr>
__device__ __forceinline__ void load_idx(std::uint32_t (&i)[Tr::B], const SkArgs& a, long long u, int lane) {
  const std::uint32_t* ip = a.indices + (std::size_t(u) * Tr::kIdxLoads * 32 + lane) * Tr::kIdxVec;
#pragma unroll
  for (int q = 0; q < Tr::kIdxLoads; ++q) {
    if constexpr (Tr::kIdxVec == 4) {
      const uint4 v = __ldcs(reinterpret_cast<const uint4*>(ip + q * 32 * 4));
      i[4 * q] = v.x, i[4 * q + 1] = v.y, i[4 * q + 2] = v.z, i[4 * q + 3] = v.w;
    } else if constexpr (Tr::kIdxVec == 2) {
      const uint2 v = __ldcs(reinterpret_cast<const uint2*>(ip + q * 32 * 2));
      i[2 * q] = v.x, i[2 * q + 1] = v.y;
    } else {
      i[q] = __ldcs(ip + q * 32);
    }
  }
}

template <class T>
__device__ __forceinline__ float x_to_f(unsigned short bits) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(bits));
  else return __uint_as_float(std::uint32_t(bits) << 16);
}

/// acc += the tile's 32 products. w0: the window of the tile's first slot; REM: that slot's offset
/// in its window (0 when N | 32), so slot j lies in window w0 + (REM + j) / N (compile-time offset).
template <class Tr, int REM>
__device__ __forceinline__ void compute_at(const Tile<Tr>& tile, float& acc, const unsigned short* xs, int w0) {
  if constexpr (!Tr::kCompute) {
    std::uint32_t f = 0;
#pragma unroll
    for (int q = 0; q < Tr::kVecs * 4; ++q) f ^= tile.v[q];
#pragma unroll
    for (int q = 0; q < Tr::B; ++q) f ^= tile.i[q];
    acc += float(f & 1u);
  } else if constexpr (Tr::LEAN && Tr::XM != kSkXNone) {
    // The tile's first window as a 32-bit shared address, once; per slot only the field, one
    // shift-add into that base and the LDS with the window offset as its immediate (the shipped
    // form lets ptxas recompute t * window bytes and merge it into each field: ~2 more per slot).
    const unsigned tb = unsigned(__cvta_generic_to_shared(xs)) + unsigned(w0 * Tr::MM * 2);
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const float w = detail::value_at<typename Tr::Elem>(tile.v, j);
      const unsigned addr = tb + (detail::field<Tr::B>(tile.i, j) << 1);
      unsigned short bits;
      asm volatile("ld.shared.u16 %0, [%1];" : "=h"(bits) : "r"(addr + unsigned(((REM + j) / Tr::NN) * Tr::MM * 2)));
      acc = fmaf(w, x_to_f<typename Tr::Elem>(bits), acc);
    }
  } else {
    const unsigned short* base = xs + w0 * Tr::MM;
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const float w = detail::value_at<typename Tr::Elem>(tile.v, j);
      if constexpr (Tr::XM == kSkXNone) {
        acc = fmaf(w, 1.0f, acc + float(detail::field<Tr::B>(tile.i, j) == 0xffu));
      } else {
        const unsigned idx = detail::field<Tr::B>(tile.i, j);
        acc = fmaf(w, x_to_f<typename Tr::Elem>(base[((REM + j) / Tr::NN) * Tr::MM + idx]), acc);
      }
    }
  }
}

/// N not dividing 32: the products of the tile's phase (warp-uniform branch; REM = R * kPhaseStep).
template <class Tr, int R>
__device__ __forceinline__ void compute_phase(const Tile<Tr>& tile, float& acc, const unsigned short* xs, int w0,
                                              int rem) {
  if constexpr (R + 1 < Tr::kPhases) {
    if (rem == R * Tr::kPhaseStep) compute_at<Tr, R * Tr::kPhaseStep>(tile, acc, xs, w0);
    else compute_phase<Tr, R + 1>(tile, acc, xs, w0, rem);
  } else {
    compute_at<Tr, R * Tr::kPhaseStep>(tile, acc, xs, w0);
  }
}

/// acc += the tile's 32 products; t: tile index within the row.
template <class Tr>
__device__ __forceinline__ void compute(const Tile<Tr>& tile, float& acc, const unsigned short* xs, int t) {
  if constexpr (Tr::kSlots % Tr::NN == 0) {
    compute_at<Tr, 0>(tile, acc, xs, t * (Tr::kSlots / Tr::NN));  // every tile starts a window
  } else {
    const unsigned s0 = unsigned(t) * unsigned(Tr::kSlots), w0 = s0 / unsigned(Tr::NN);  // t >= 0
    compute_phase<Tr, 0>(tile, acc, xs, int(w0), int(s0 - w0 * unsigned(Tr::NN)));
  }
}

/// acc += the tile's products. VM > 0: the warp first gathers the tile's 64 selected X values (16
/// windows x 4; lane L: window L / 2, positions 2 (L % 2) and 2 (L % 2) + 1, columns from its table
/// byte), converted to fp32 once here, into its gather buffer `gb` (64 floats at shared address
/// gb, alternating between two so one __syncwarp per tile orders both the writes before the reads
/// and the previous tile's reads before the writes); then the 2:4 products with that buffer as X:
/// per slot the 2-bit field, one LDS.32 at gb + 16 (j / 2) + 4 field (immediate offset), one FFMA.
template <class Tr>
__device__ __forceinline__ void product(const Tile<Tr>& tile, float& acc, const unsigned short* xs, int t, unsigned gb,
                                        int lane) {
  if constexpr (Tr::VM > 0) {
    using T = typename Tr::Elem;
    const unsigned short* xw = xs + (t * (Tr::kSlots / 2) + (lane >> 1)) * Tr::VM;
    const float lo = x_to_f<T>(xw[tile.c & 15u]), hi = x_to_f<T>(xw[(tile.c >> 4) & 15u]);
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(gb + unsigned(lane * 8)), "f"(lo), "f"(hi) : "memory");
    __syncwarp();
#pragma unroll
    for (int j = 0; j < Tr::kSlots; ++j) {
      const float w = detail::value_at<T>(tile.v, j);
      float x;
      asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(gb + (detail::field<2>(tile.i, j) << 2) + unsigned((j / 2) * 16)));
      acc = fmaf(w, x, acc);
    }
  } else {
    compute<Tr>(tile, acc, xs, t);
  }
}

/// Adds a partial group sum (ntiles of the group's tiles) and, if it completes the group, writes Y.
__device__ __forceinline__ void flush(const SkArgs& a, int g, float v, unsigned ntiles, int lane) {
  const int row = g * 32 + lane;
  atomicAdd(a.ws + row, v);
  __threadfence();
  __syncwarp();
  unsigned prev = 0;
  if (lane == 0) prev = atomicAdd(a.cnt + g, ntiles);
  prev = __shfl_sync(0xffffffffu, prev, 0);
  if (prev + ntiles == unsigned(a.tiles)) {
    __threadfence();
    const float s = atomicExch(a.ws + row, 0.0f);
    if (lane == 0) atomicExch(a.cnt + g, 0u);
    if (row < a.n) detail::store_y(a.y, std::size_t(row), s, a.y_dtype);
  }
}

}  // namespace sk

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks) ew_spmv_sk_kernel(const __grid_constant__ SkArgs a) {
  using T = typename Tr::Elem;
  // its own name: other kernels of a translation unit declare the dynamic shared memory with 16-byte alignment
  extern __shared__ __align__(128) unsigned char sk_smem[];
  __shared__ __align__(8) unsigned long long bar;
  unsigned short* xs = reinterpret_cast<unsigned short*>(sk_smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const long long gw = (long long)blockIdx.x * Tr::kWarps + warp;
  const long long u0 = gw * a.units / a.warps_total, u1 = (gw + 1) * a.units / a.warps_total;
  // Where step q of this warp's range is stored: unit u0 + q in the packed order; GRID: slot
  // q W + gw for the steps every warp takes (q < lmin), then the long warps' last unit densely after
  // them, at lmin W + (number of long warps before this one = u0 - gw lmin).
  // 32-bit: the plan admits the grid order for units < 2^31 only (spmv_sk_grid_order).
  [[maybe_unused]] const int lmin = Tr::GRID ? int(a.grid_lmin) : 0, gw32 = int(gw);
  [[maybe_unused]] const int tail_slot = Tr::GRID ? lmin * a.warps_total + int(u0 - gw * lmin) : 0;
  // SK_AT(q, d): where step q + d lies (the packed-order forms keep their expression u0 + q + d
  // as written before the grid order existed, so their SASS is unchanged).
#define SK_AT(q, d) \
  (Tr::GRID ? (long long)((q) + (d) < lmin ? ((q) + (d)) * a.warps_total + gw32 : tail_slot) : u0 + (q) + (d))

  sk::Tile<Tr> ta, tb;
  sk::TabCursor cur;  // VM > 0: the table of the next unit fetched
  if constexpr (Tr::VM > 0) cur.init(a, u0);
  // VM > 0: this warp's two gather buffers (64 floats each, shared addresses), used alternately (tile q: q % 2).
  [[maybe_unused]] const unsigned gbuf =
      unsigned(__cvta_generic_to_shared(sk_smem)) + unsigned(a.gather_off + warp * Tr::kGatherBytes);
  // RING > 0: this warp's ring of Tr::RING stages; the first RING - 1 tiles are requested here (one
  // commit group each, empty groups past the range), before X.
  [[maybe_unused]] const unsigned ring_sh =
      unsigned(__cvta_generic_to_shared(sk_smem)) + unsigned(a.ring_off) + unsigned(warp * Tr::RING * Tr::kTileBytes);
  [[maybe_unused]] const unsigned char* ring = sk_smem + a.ring_off + warp * Tr::RING * Tr::kTileBytes;
  // IREG: index words of tiles q .. q + RING - 2, slot q % RING.
  [[maybe_unused]] std::uint32_t ix[Tr::RING > 0 ? Tr::RING : 1][Tr::B];
  if constexpr (Tr::RING > 0) {
#pragma unroll
    for (int s = 0; s < Tr::RING - 1; ++s) {
      if (u0 + s < u1) {
        sk::ring_issue<Tr>(ring_sh + unsigned(s * Tr::kTileBytes), a, SK_AT(0, s), lane, cur);
        if constexpr (Tr::IREG) sk::load_idx<Tr>(ix[s], a, SK_AT(0, s), lane);
      }
      sk::ring_commit();
    }
  } else {
    if (u0 < u1) sk::load<Tr>(ta, a, SK_AT(0, 0), lane, cur);
    if (u0 + 1 < u1) sk::load<Tr>(tb, a, SK_AT(0, 1), lane, cur);
  }

  const unsigned bar_addr = unsigned(__cvta_generic_to_shared(&bar));
  // The bulk copy and the mbarrier wait are sm_90 instructions: the sm_80 build of the same
  // instance copies all of X with the threads (the kSkXLoop path), whatever x_bulk says.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  constexpr bool kBulk = false;
#else
  constexpr bool kBulk = Tr::XM == kSkXBulk;
#endif
  (void)bar_addr;
  if constexpr (Tr::XM != kSkXNone) {
    const int from = kBulk ? a.x_bulk / 2 : 0;
    if constexpr (kBulk) {
      if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      }
    }
    const unsigned short* xg = static_cast<const unsigned short*>(a.x);
    for (int c = from + int(threadIdx.x); c < a.x_cols; c += Tr::kThreads) xs[c] = c < a.k ? xg[c] : 0;
    __syncthreads();
    if constexpr (kBulk) {
      if (threadIdx.x == 0) {
        if (a.x_bulk > 0) {
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr), "r"(a.x_bulk) : "memory");
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                  unsigned(__cvta_generic_to_shared(xs))),
              "l"(a.x), "r"(a.x_bulk), "r"(bar_addr)
              : "memory");
        } else {
          asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar_addr) : "memory");
        }
      }
    }
  }
  bool x_ready = !kBulk;
  auto wait_x = [&]() {
    if constexpr (kBulk) {
      if (!x_ready) {
        unsigned done = 0;
        while (!done) {
          asm volatile(
              "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
              : "=r"(done)
              : "r"(bar_addr)
              : "memory");
        }
        x_ready = true;
      }
    }
  };

  // Groups closed inside the range are stored straight to Y, except the first one when the range
  // starts inside it (its partial waits in `head`); the group open at the end is a partial too.
  float acc = 0.0f, head = 0.0f;
  const int g0 = int(u0 / a.tiles), t0 = int(u0 - (long long)g0 * a.tiles);
  int g = g0, t = t0;
  auto step = [&]() {
    if (++t == a.tiles) {
      if (g == g0 && t0 != 0) {
        head = acc;
        if constexpr (Tr::END == kSkEndPar) atomicAdd(a.ws + g0 * 32 + lane, acc);  // RED: nothing waits
      } else {
        const int row = g * 32 + lane;
        if (row < a.n) detail::store_y(a.y, std::size_t(row), acc, a.y_dtype);
      }
      acc = 0.0f;
      ++g;
      t = 0;
    }
  };
  const int n_units = int(u1 - u0);
  if (n_units > 0) wait_x();
  if constexpr (Tr::IREG) {
    // Unrolled by RING: stage and index slot of tile q0 + s are s (compile-time).
    constexpr int R = Tr::RING;
    for (int q0 = 0; q0 < n_units; q0 += R) {
#pragma unroll
      for (int s = 0; s < R; ++s) {
        const int q = q0 + s;
        if (q < n_units) {
          sk::ring_wait<R - 2>();  // this lane's value copies of tile q have landed
          const int refill = (s + R - 1) % R;  // slot of tile q - 1 = slot of tile q + R - 1
          if (q + R - 1 < n_units) {
            sk::ring_issue<Tr>(ring_sh + unsigned(refill * Tr::kTileBytes), a, SK_AT(q, R - 1), lane, cur);
            sk::load_idx<Tr>(ix[refill], a, SK_AT(q, R - 1), lane);
          }
          sk::ring_commit();
          sk::ring_read<Tr>(ta, ring + s * Tr::kTileBytes, lane);
#pragma unroll
          for (int w = 0; w < Tr::B; ++w) ta.i[w] = ix[s][w];
          sk::product<Tr>(ta, acc, xs, t, gbuf, lane);
          step();
        }
      }
    }
  } else if constexpr (Tr::RING > 0) {
    constexpr int R = Tr::RING;
    int stage = 0;  // stage of tile q
    for (int q = 0; q < n_units; ++q) {
      sk::ring_wait<R - 2>();  // this lane's copies of tile q have landed (R - 2 younger groups may pend)
      __syncwarp();            // ... and every lane's; every lane is done reading stage q - 1
      const int refill = stage == 0 ? R - 1 : stage - 1;  // stage of tile q - 1 = stage of tile q + R - 1
      if (q + R - 1 < n_units)
        sk::ring_issue<Tr>(ring_sh + unsigned(refill * Tr::kTileBytes), a, SK_AT(q, R - 1), lane, cur);
      sk::ring_commit();
      sk::ring_read<Tr>(ta, ring + stage * Tr::kTileBytes, lane);
      sk::product<Tr>(ta, acc, xs, t, gbuf + unsigned(q & 1) * 256u, lane);
      step();
      stage = stage + 1 == R ? 0 : stage + 1;
    }
  }
  for (int q = 0; Tr::RING == 0 && q < n_units; q += 2) {
    sk::product<Tr>(ta, acc, xs, t, gbuf, lane);
    if (q + 2 < n_units) sk::load<Tr>(ta, a, SK_AT(q, 2), lane, cur);
    step();
    if (q + 1 < n_units) {
      sk::product<Tr>(tb, acc, xs, t, gbuf + 256u, lane);
      if (q + 3 < n_units) sk::load<Tr>(tb, a, SK_AT(q, 3), lane, cur);
      step();
    }
  }
  if constexpr (Tr::END == kSkEndSerial) {
    if (n_units > 0) {
      if (t0 != 0 && g != g0) sk::flush(a, g0, head, unsigned(a.tiles - t0), lane);  // head closed in the loop
      if (t != 0) sk::flush(a, g, acc, unsigned(g == g0 ? t - t0 : t), lane);        // the open group
    }
  } else if (n_units > 0) {
    // Head partial (if its group closed in the loop) is already in the workspace; add the open
    // group's, then one fence orders both before the counters.
    const bool has_head = t0 != 0 && g != g0, has_tail = t != 0;
    if (has_head || has_tail) {
      const unsigned n_head = unsigned(a.tiles - t0), n_tail = unsigned(g == g0 ? t - t0 : t);
      if (has_tail) atomicAdd(a.ws + g * 32 + lane, acc);
      // Release (the partials before the counter); acquire below. An acq_rel fence suffices for
      // this message passing: __threadfence() is the heavier sequentially consistent MEMBAR.SC.
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      __syncwarp();
      unsigned prev = 0;  // lane 0: head group's counter, lane 1: open group's counter (one ATOM)
      if ((lane == 0 && has_head) || (lane == 1 && has_tail))
        prev = atomicAdd(a.cnt + (lane == 0 ? g0 : g), lane == 0 ? n_head : n_tail);
      const unsigned prev_h = __shfl_sync(0xffffffffu, prev, 0), prev_t = __shfl_sync(0xffffffffu, prev, 1);
      const bool done_h = has_head && prev_h + n_head == unsigned(a.tiles);
      const bool done_t = has_tail && prev_t + n_tail == unsigned(a.tiles);
      if (done_h || done_t) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        float s_h = 0.0f, s_t = 0.0f;
        if (done_h) s_h = atomicExch(a.ws + g0 * 32 + lane, 0.0f);
        if (done_t) s_t = atomicExch(a.ws + g * 32 + lane, 0.0f);
        if (lane == 0 && done_h) atomicExch(a.cnt + g0, 0u);
        if (lane == 1 && done_t) atomicExch(a.cnt + g, 0u);
        const int row_h = g0 * 32 + lane, row_t = g * 32 + lane;
        if (done_h && row_h < a.n) detail::store_y(a.y, std::size_t(row_h), s_h, a.y_dtype);
        if (done_t && row_t < a.n) detail::store_y(a.y, std::size_t(row_t), s_t, a.y_dtype);
      }
    }
  }
#undef SK_AT
  if constexpr (kBulk) {
    // A CTA must not exit with its bulk copy still writing its shared memory.
    if (u0 >= u1) wait_x();
  }
}

}  // namespace sparsenm::cuda::ew

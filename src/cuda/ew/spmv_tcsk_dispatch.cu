// sparsenm — ew_spmv_tc_sk: instance table, plan-time configuration and the unit-order reorder.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "cuda/ew/spmv_tc_traits.cuh"
#include "cuda/ew/spmv_tcsk.hpp"
#include "cuda/ew/spmv_tcsp_decode.cuh"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tcsk(const TcSkArgs& a, const TcSkConfig& cfg, cudaStream_t stream);  // spmv_tcsk_launch.cuh
template <class T, int NN, int MM, bool SP, int WARPS, int RING, int FIX>
struct TcSkTraits;  // spmv_tcsk_kernel.cuh

namespace {

template <class T, bool SP, int W = kTcSkMaxWarps, int R = kTcSkRing, int F = 0>
TcSkLaunchFn find_typed(int pn, int pm) {
  if (pn == 2 && pm == 8) return &launch_spmv_tcsk<TcSkTraits<T, 2, 8, SP, W, R, F>>;
  if (pn == 1 && pm == 8) return &launch_spmv_tcsk<TcSkTraits<T, 1, 8, SP, W, R, F>>;
  if (pn == 2 && pm == 16) return &launch_spmv_tcsk<TcSkTraits<T, 2, 16, SP, W, R, F>>;
  if (pn == 1 && pm == 16) return &launch_spmv_tcsk<TcSkTraits<T, 1, 16, SP, W, R, F>>;
  return nullptr;
}

template <class T>
TcSkLaunchFn find_dense(int pn, int pm, TcSkShape shape) {
  switch (shape) {
    case TcSkShape::w16r3: return find_typed<T, false>(pn, pm);
    case TcSkShape::w24r3: return find_typed<T, false, 24, 3>(pn, pm);
    case TcSkShape::w24r2: return find_typed<T, false, 24, 2>(pn, pm);
    case TcSkShape::w16r4: return find_typed<T, false, 16, 4>(pn, pm);
    case TcSkShape::w16r3s: return find_typed<T, false, 16, 3, kTcSkFixSettle>(pn, pm);
    case TcSkShape::w16r4b: return find_typed<T, false, 16, 4, kTcSkFixPrologue | kTcSkFixSettle>(pn, pm);
    case TcSkShape::w16r4s: return find_typed<T, false, 16, 4, kTcSkFixSettle>(pn, pm);
    case TcSkShape::w24r2s: return find_typed<T, false, 24, 2, kTcSkFixSettle>(pn, pm);
    case TcSkShape::w16r4c: return find_typed<T, false, 16, 4, kTcSkFixPrologue | kTcSkFixSettle | kTcSkFixSpread>(pn, pm);
  }
  return nullptr;
}

long long round128(long long b) { return (b + 127) / 128 * 128; }

}  // namespace

TcSkLaunchFn find_spmv_tcsk(DType dtype, int pn, int pm, bool sparse, TcSkShape shape) {
  if (sparse && shape != TcSkShape::w16r3) return nullptr;
  switch (dtype) {
    case DType::f16: return sparse ? find_typed<__half, true>(pn, pm) : find_dense<__half>(pn, pm, shape);
    case DType::bf16: return sparse ? find_typed<__nv_bfloat16, true>(pn, pm) : find_dense<__nv_bfloat16>(pn, pm, shape);
    default: return nullptr;
  }
}

std::string spmv_tcsk_unsupported(const FormatLayout& f, DType dtype, long long m, bool sparse) {
  const std::string kn = sparse ? "ew_spmv_tc_sp" : "ew_spmv_tc_sk";
  if (m < 1 || m > 8) return kn + " serves m = 1..8 (got m = " + std::to_string(m) + ")";
  if (auto why = SpmvTcLayout::why_not(f, dtype); !why.empty()) return why;
  if (!find_spmv_tcsk(dtype, f.pattern.n, f.pattern.m, sparse))
    return kn + ": pattern " + f.pattern.str() + " is not compiled (2:8, 1:8, 2:16, 1:16 are)";
  if (f.rows > (1ll << 30) || f.cols > (1ll << 30)) return kn + ": rows and cols must be < 2^30";
  return {};
}

TcSkConfig plan_spmv_tcsk(const SpmvTcLayout& l, int m, int sms, int smem_limit, TcSkArgs& a, int grid_override,
                          int warps_override, int kc_override, bool sparse, TcSkShape shape) {
  if (sparse && shape != TcSkShape::w16r3)
    throw InvalidArgument("shape", "ew_spmv_tc_sp: only the 16-warp, 3-stage shape is compiled");
  const int max_warps = tcsk_shape_warps(shape), ring = tcsk_shape_ring(shape);
  const int cw = warps_override > 0 ? warps_override : max_warps;
  if (cw > max_warps)
    throw InvalidArgument("warps_override", "ew_spmv_tc_sk: at most " + std::to_string(max_warps) + " warps per CTA");
  const int grid = grid_override > 0 ? grid_override : std::max(1, sms);
  if (kc_override > l.tiles) throw InvalidArgument("kc_override", "ew_spmv_tc_sk: more tiles per chunk than the row has");
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.tiles = int(l.tiles);
  a.row_blocks = int(l.row_blocks);
  a.units = l.row_blocks * l.tiles;
  a.cta_warps = cw;
  a.warps_total = grid * cw;
  const long long table = sparse ? tcsp::table_bytes(l.n, l.m) : spmv_tc_table_bytes(kDecPrmt, l.n, l.m);
  if (table == 0) throw InvalidArgument("l", "ew_spmv_tc_sk / tc_sp: no selector table for " + std::to_string(l.n) + ":" + std::to_string(l.m));
  const int pitch_m = sparse ? l.m / 2 : l.m;  // tc_sp: 8-byte (M = 8) / 16-byte (M = 16) B reads per lane
  const long long tile_bytes = 2048 + 128ll * l.bits;
  const long long rings = (long long)cw * ring * tile_bytes;
  const long long bars = (tcsk_shape_fix(shape) & kTcSkFixPrologue) ? kTcSkBarBytes : 0;
  const long long U = a.units, W = a.warps_total;
  // The widest X span (in tiles) of any CTA for chunks of kc tiles.
  auto widest = [&](long long kc) {
    long long best = 0;
    const long long rk = l.row_blocks * kc;
    for (long long b = 0; b < grid; ++b) {
      const long long lo = b * cw * U / W, hi = (b + 1) * cw * U / W;
      if (lo >= hi) continue;
      const long long t0 = lo / rk * kc, t1 = std::min<long long>(l.tiles, ((hi - 1) / rk + 1) * kc);
      best = std::max(best, t1 - t0);
    }
    return std::max<long long>(best, 1);
  };
  for (long long kc = kc_override > 0 ? kc_override : l.tiles; kc >= 1; --kc) {
    const long long pitch = spmv_tc_pitch(int(widest(kc) * l.tile_cols), pitch_m);
    const long long xb = round128(8 * pitch);
    const long long total = table + xb + rings + bars;
    if (total > smem_limit && kc_override <= 0) continue;
    if (total > smem_limit)
      throw InvalidArgument("kc_override", "ew_spmv_tc_sk: " + std::to_string(total) + " B of shared memory needed, " +
                                               std::to_string(smem_limit) + " allowed");
    a.kc = int(kc);
    a.chunks = int((l.tiles + kc - 1) / kc);
    a.pitch = int(pitch);
    a.x_off = int(table);
    a.ring_off = int(table + xb);
    a.bar_off = bars > 0 ? int(table + xb + rings) : 0;
    TcSkConfig cfg;
    cfg.grid = grid;
    cfg.smem_bytes = int(total);
    return cfg;
  }
  throw InvalidArgument("smem_limit", "ew_spmv_tc_sk: the selector table, the tile rings and one tile of X need more than " +
                                          std::to_string(smem_limit) + " B of shared memory");
}

void reorder_spmv_tcsk(const SpmvTcPacked& p, int kc, std::vector<std::byte>& values, std::vector<std::uint32_t>& indices) {
  const SpmvTcLayout& l = p.layout;
  if (kc < 1 || kc > l.tiles) throw InvalidArgument("kc", "reorder_spmv_tcsk: must be 1..tiles");
  const std::size_t vb = 2048, iw = std::size_t(l.bits) * 32;
  if (p.values.size() != std::size_t(l.row_blocks * l.tiles) * vb || p.indices.size() != std::size_t(l.row_blocks * l.tiles) * iw)
    throw InvalidArgument("p", "reorder_spmv_tcsk: packed sizes do not match the layout");
  values.resize(p.values.size());
  indices.resize(p.indices.size());
  std::size_t u = 0;
  for (std::int64_t t0 = 0; t0 < l.tiles; t0 += kc) {
    const std::int64_t tcn = std::min<std::int64_t>(kc, l.tiles - t0);
    for (std::int64_t rb = 0; rb < l.row_blocks; ++rb)
      for (std::int64_t tt = 0; tt < tcn; ++tt, ++u) {
        const std::size_t src = std::size_t(rb * l.tiles + t0 + tt);
        std::memcpy(values.data() + u * vb, p.values.data() + src * vb, vb);
        std::memcpy(indices.data() + u * iw, p.indices.data() + src * iw, iw * 4);
      }
  }
}

}  // namespace sparsenm::cuda::ew

// sparsenm — EW-N:M tensor-core SpMV: instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/ew/spmv_tc.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tc(const SpmvTcArgs& a, const SpmvTcConfig& cfg, cudaStream_t stream);  // spmv_tc_launch.cuh
template <class Tr>
int occupancy_spmv_tc(int smem_bytes, int threads, int ksplit, int sms);  // spmv_tc_launch.cuh

namespace {

struct Entry {
  SpmvTcLaunchFn launch = nullptr;
  SpmvTcOccupancyFn occupancy = nullptr;
};

template <class Tr>
Entry entry() {
  return {&launch_spmv_tc<Tr>, &occupancy_spmv_tc<Tr>};
}

/// kind: 0 shift decode (shift, balanced), 1 prmt, 2 ring.
template <class T>
Entry find_typed(int pn, int pm, int kind) {
#define TC(N, M) \
  if (kind == 0 && pn == N && pm == M) return entry<SpmvTcTraits<T, N, M, kDecShift>>();
#define TCP(N, M) \
  if (kind == 1 && pn == N && pm == M) return entry<SpmvTcTraits<T, N, M, kDecPrmt>>();
#define TCR(N, M) \
  if (kind == 2 && pn == N && pm == M) return entry<SpmvTcTraits<T, N, M, kDecPrmt, kTcRing>>();
#include "cuda/ew/spmv_tc_instances.def"
#undef TC
#undef TCP
#undef TCR
  return {};
}

Entry find_entry(DType dtype, int pn, int pm, SpmvTcVariant v) {
  const int kind = v == SpmvTcVariant::prmt ? 1 : v == SpmvTcVariant::ring ? 2 : 0;
  switch (dtype) {
    case DType::f16: return find_typed<__half>(pn, pm, kind);
    case DType::bf16: return find_typed<__nv_bfloat16>(pn, pm, kind);
    default: return {};
  }
}

constexpr int kSmemBudget = 96 * 1024;     // per CTA (shift, balanced)
constexpr int kSmem3 = 227 * 1024 / 3 - 1024;  // per CTA so that 3 CTAs fit an SM (prmt: table + X)
constexpr int kRedBytes = 8 * 128 * 4;

long long phase_smem(const SpmvTcLayout& l, long long tiles) {
  return 8ll * spmv_tc_pitch(int(tiles * l.tile_cols), l.m);
}

}  // namespace

const char* spmv_tc_variant_name(SpmvTcVariant v) {
  switch (v) {
    case SpmvTcVariant::balanced: return "ew_spmv_tc_bal";
    case SpmvTcVariant::prmt: return "ew_spmv_tc_prmt";
    case SpmvTcVariant::ring: return "ew_spmv_tc_ring";
    default: return "ew_spmv_tc";
  }
}

SpmvTcLaunchFn find_spmv_tc(DType dtype, int pn, int pm, SpmvTcVariant v) { return find_entry(dtype, pn, pm, v).launch; }
SpmvTcOccupancyFn find_spmv_tc_occupancy(DType dtype, int pn, int pm, SpmvTcVariant v) {
  return find_entry(dtype, pn, pm, v).occupancy;
}

std::string spmv_tc_unsupported(const FormatLayout& f, DType dtype, long long m, SpmvTcVariant v) {
  const std::string name = spmv_tc_variant_name(v);
  if (m < 1 || m > 8) return name + " serves m = 1..8 (got m = " + std::to_string(m) + ")";
  if (auto why = SpmvTcLayout::why_not(f, dtype); !why.empty()) return why;
  if (!find_spmv_tc(dtype, f.pattern.n, f.pattern.m, v))
    return name + ": pattern " + f.pattern.str() + " is not compiled (" +
           (v == SpmvTcVariant::prmt || v == SpmvTcVariant::ring ? "2:8, 1:8, 2:16, 1:16" : "2:4, 4:8, 2:8, 1:8, 2:16, 1:16") +
           " are); ew_spmv serves it";
  if (f.rows > (1ll << 30) || f.cols > (1ll << 30)) return name + ": rows and cols must be < 2^30";
  return {};
}

SpmvTcConfig plan_spmv_tc(const SpmvTcLayout& l, DType dtype, int m, int sms, SpmvTcArgs& a, int smem_budget,
                          int max_split, SpmvTcVariant v) {
  const bool table_dec = v == SpmvTcVariant::prmt || v == SpmvTcVariant::ring;
  const long long table = spmv_tc_table_bytes(table_dec ? kDecPrmt : kDecShift, l.n, l.m);
  const long long dflt = table_dec ? kSmem3 - table : kSmemBudget;
  // ring: a phase holds a multiple of kTcRing tiles (its slots are compile-time), so at least that
  const long long unit = v == SpmvTcVariant::ring ? kTcRing : 1;
  const long long budget = std::max<long long>(smem_budget > 0 ? smem_budget : dflt, phase_smem(l, unit));
  const long long cap = max_split > 0 ? std::min(max_split, 8) : 8;
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.tiles = int(l.tiles);
  a.row_blocks = int(l.row_blocks);
  const SpmvTcOccupancyFn occupancy = find_spmv_tc_occupancy(dtype, l.n, l.m, v);
  auto shape = [&](long long ks, SpmvTcArgs& s) {
    s.ksplit = int(ks);
    s.tiles_per_split = int((l.tiles + ks - 1) / ks);
    long long tpp = s.tiles_per_split;
    while (tpp > 1 && phase_smem(l, tpp) > budget) tpp = (tpp + 1) / 2;
    if (tpp < s.tiles_per_split && unit > 1) {  // ring: the largest multiple of the ring that fits
      tpp = std::max(unit, tpp / unit * unit);
      while (tpp + unit < s.tiles_per_split && phase_smem(l, tpp + unit) <= budget) tpp += unit;
      if (tpp >= s.tiles_per_split) tpp = s.tiles_per_split;
    }
    s.tiles_per_phase = int(std::max<long long>(1, tpp));
    long long smem = table + phase_smem(l, s.tiles_per_phase);
    if (ks > 1) smem = std::max<long long>(smem, kRedBytes);
    return int(smem);
  };
  const long long max_ks = std::min<long long>(cap, std::max<long long>(1, l.tiles));
  if (v == SpmvTcVariant::shift || v == SpmvTcVariant::prmt) {
    // The largest split (<= cap, <= tiles) whose grid fits one wave of resident CTAs (a partial
    // second wave would run alone at the end), and at least 1; 8 warps per CTA. shift: resident
    // = CTAs per SM x SMs (the session-3 rule, unchanged); prmt: clusters counted by the
    // occupancy API (a cluster's CTAs must share a GPC, so fewer may fit).
    a.cta_warps = 8;
    const long long row_ctas = (l.row_blocks + 7) / 8;
    long long best = 1;
    for (long long ks = 1; ks <= max_ks; ++ks) {
      SpmvTcArgs s = a;
      const int smem = shape(ks, s);
      long long resident = sms;
      if (occupancy)
        resident = v == SpmvTcVariant::shift
                       ? (long long)std::max(1, occupancy(smem, 256, 1, sms) / std::max(1, sms)) * sms
                       : (long long)occupancy(smem, 256, int(ks), sms);
      if (row_ctas * ks <= resident) best = ks;
    }
    SpmvTcConfig cfg;
    cfg.smem_bytes = shape(best, a);
    return cfg;
  }
  // balanced and ring: over CTA widths w (8..4 warps) and splits ks, among the grids that fit one wave
  // (clusters counted by the occupancy API), the least max(warps on the busiest SM, kSatWarps) x
  // tiles per split: the busiest SM's warp-tiles while it has the warps to stay saturated, else
  // the serial time of one warp (kSatWarps, the warps an SM needs to saturate, is an assumption
  // to measure). Ties: more warps on the busiest SM (more loads in flight), then the smaller split.
  constexpr long long kSatWarps = 12;
  long long best_cost = -1, best_w = 8, best_ks = 1, best_warps = 0;
  for (long long ks = 1; ks <= max_ks; ++ks)
    for (long long w = 8; w >= 4; --w) {
      SpmvTcArgs s = a;
      const int smem = shape(ks, s);
      const long long ctas = (l.row_blocks + w - 1) / w * ks;
      const long long resident = occupancy ? occupancy(smem, int(32 * w), int(ks), sms) : sms;
      if (ctas > resident && !(ks == 1 && w == 8)) continue;  // (8 warps, no split) is always allowed
      const long long warps = (ctas + sms - 1) / sms * w;  // on the busiest SM
      const long long cost = std::max(warps, kSatWarps) * s.tiles_per_split;
      if (best_cost < 0 || cost < best_cost || (cost == best_cost && warps > best_warps))
        best_cost = cost, best_w = w, best_ks = ks, best_warps = warps;
    }
  a.cta_warps = int(best_w);
  SpmvTcConfig cfg;
  cfg.smem_bytes = shape(best_ks, a);
  return cfg;
}

}  // namespace sparsenm::cuda::ew

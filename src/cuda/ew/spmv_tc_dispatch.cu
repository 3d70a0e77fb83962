// sparsenm — EW-N:M tensor-core SpMV: instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/ew/spmv_tc.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_tc(const SpmvTcArgs& a, const SpmvTcConfig& cfg, cudaStream_t stream);  // spmv_tc_launch.cuh
template <class Tr>
int occupancy_spmv_tc(int smem_bytes);  // spmv_tc_launch.cuh

namespace {

struct Entry {
  SpmvTcLaunchFn launch = nullptr;
  SpmvTcOccupancyFn occupancy = nullptr;
};

template <class T>
Entry find_typed(int pn, int pm) {
#define TC(N, M) \
  if (pn == N && pm == M) return {&launch_spmv_tc<SpmvTcTraits<T, N, M>>, &occupancy_spmv_tc<SpmvTcTraits<T, N, M>>};
#include "cuda/ew/spmv_tc_instances.def"
#undef TC
  return {};
}

Entry find_entry(DType dtype, int pn, int pm) {
  switch (dtype) {
    case DType::f16: return find_typed<__half>(pn, pm);
    case DType::bf16: return find_typed<__nv_bfloat16>(pn, pm);
    default: return {};
  }
}

constexpr int kSmemBudget = 96 * 1024;  // per CTA
constexpr int kRowsPerCta = 128, kRedBytes = 8 * kRowsPerCta * 4;

long long phase_smem(const SpmvTcLayout& l, long long tiles) {
  return 8ll * spmv_tc_pitch(int(tiles * l.tile_cols), l.m);
}

}  // namespace

SpmvTcLaunchFn find_spmv_tc(DType dtype, int pn, int pm) { return find_entry(dtype, pn, pm).launch; }
SpmvTcOccupancyFn find_spmv_tc_occupancy(DType dtype, int pn, int pm) { return find_entry(dtype, pn, pm).occupancy; }

std::string spmv_tc_unsupported(const FormatLayout& f, DType dtype, long long m) {
  if (m < 1 || m > 8) return "ew_spmv_tc serves m = 1..8 (got m = " + std::to_string(m) + ")";
  if (auto why = SpmvTcLayout::why_not(f, dtype); !why.empty()) return why;
  if (!find_spmv_tc(dtype, f.pattern.n, f.pattern.m))
    return "ew_spmv_tc: pattern " + f.pattern.str() +
           " is not compiled (2:4, 4:8, 2:8, 1:8, 2:16, 1:16 are); ew_spmv serves it";
  if (f.rows > (1ll << 30) || f.cols > (1ll << 30)) return "ew_spmv_tc: rows and cols must be < 2^30";
  return {};
}

SpmvTcConfig plan_spmv_tc(const SpmvTcLayout& l, DType dtype, int m, int sms, SpmvTcArgs& a, int smem_budget,
                          int max_split) {
  const long long budget = std::max<long long>(smem_budget > 0 ? smem_budget : kSmemBudget, phase_smem(l, 1));
  const long long cap = max_split > 0 ? std::min(max_split, 8) : 8;
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.tiles = int(l.tiles);
  a.row_blocks = int(l.row_blocks);
  const SpmvTcOccupancyFn occupancy = find_spmv_tc_occupancy(dtype, l.n, l.m);
  const long long row_ctas = (l.row_blocks + 7) / 8;
  auto shape = [&](long long ks, SpmvTcArgs& s) {
    s.ksplit = int(ks);
    s.tiles_per_split = int((l.tiles + ks - 1) / ks);
    long long tpp = s.tiles_per_split;
    while (tpp > 1 && phase_smem(l, tpp) > budget) tpp = (tpp + 1) / 2;
    s.tiles_per_phase = int(std::max<long long>(1, tpp));
    long long smem = phase_smem(l, s.tiles_per_phase);
    if (ks > 1) smem = std::max<long long>(smem, kRedBytes);
    return int(smem);
  };
  // The largest split (<= cap, <= tiles) whose grid fits one wave of resident CTAs (a partial
  // second wave would run alone at the end), and at least 1.
  long long best = 1;
  for (long long ks = 1; ks <= std::min<long long>(cap, std::max<long long>(1, l.tiles)); ++ks) {
    SpmvTcArgs s = a;
    const int smem = shape(ks, s);
    const int per_sm = occupancy ? std::max(1, occupancy(smem)) : 1;
    if (row_ctas * ks <= (long long)per_sm * sms) best = ks;
  }
  SpmvTcConfig cfg;
  cfg.smem_bytes = shape(best, a);
  return cfg;
}

}  // namespace sparsenm::cuda::ew

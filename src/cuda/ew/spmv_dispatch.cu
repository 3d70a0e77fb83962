// sparsenm — EW-N:M SpMV: instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/ew/spmv.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream);  // spmv_launch.cuh
template <class Tr>
int occupancy_spmv(int smem_bytes);  // spmv_launch.cuh

namespace {

struct Entry {
  SpmvLaunchFn launch = nullptr;
  SpmvOccupancyFn occupancy = nullptr;
};
template <class Tr>
Entry entry() {
  return {&launch_spmv<Tr>, &occupancy_spmv<Tr>};
}

template <class T, int MR>
Entry find_typed(int bits, int pn, int pm, bool* spec) {
#define SPEC(N, M) \
  if (pn == N && pm == M) { *spec = true; return entry<SpmvTraits<T, MR, spmv_bits(M), N, M>>(); }
#include "cuda/ew/spmv_instances.def"
#undef SPEC
  *spec = false;
  switch (bits) {
    case 1: return entry<SpmvTraits<T, MR, 1>>();
    case 2: return entry<SpmvTraits<T, MR, 2>>();
    case 3: return entry<SpmvTraits<T, MR, 3>>();
    case 4: return entry<SpmvTraits<T, MR, 4>>();
    case 5: return entry<SpmvTraits<T, MR, 5>>();
    case 6: return entry<SpmvTraits<T, MR, 6>>();
    case 7: return entry<SpmvTraits<T, MR, 7>>();
    case 8: return entry<SpmvTraits<T, MR, 8>>();
    default: return {};
  }
}

template <class T>
Entry find_mr(int mr, int bits, int pn, int pm, bool* spec) {
  switch (mr) {
    case 1: return find_typed<T, 1>(bits, pn, pm, spec);
    case 4: return find_typed<T, 4>(bits, pn, pm, spec);
    case 8: return find_typed<T, 8>(bits, pn, pm, spec);
    default: return {};
  }
}

Entry find_entry(DType dtype, int mr, int bits, int pn, int pm, bool* spec) {
  switch (dtype) {
    case DType::f16: return find_mr<__half>(mr, bits, pn, pm, spec);
    case DType::bf16: return find_mr<__nv_bfloat16>(mr, bits, pn, pm, spec);
    case DType::f32: return find_mr<float>(mr, bits, pn, pm, spec);
    default: return {};
  }
}

int mr_for(long long m) { return m <= 1 ? 1 : m <= 4 ? 4 : 8; }
constexpr int kSmemBudget = 96 * 1024;  // per CTA; keeps >= 2 CTAs per SM
constexpr int kRowsPerCta = 256, kSlots = 32;

/// Shared bytes for X of `tiles` consecutive tiles (worst-case alignment), per column width xb.
long long span_bytes(const SpmvLayout& l, long long tiles, int xb) {
  const long long windows = (tiles * kSlots + l.n - 1) / l.n + 1;
  return windows * l.m * xb;
}

}  // namespace

SpmvLaunchFn find_spmv(DType dtype, int mr, int bits, int pn, int pm, bool* specialised) {
  bool spec = false;
  const Entry e = find_entry(dtype, mr, bits, pn, pm, &spec);
  if (specialised) *specialised = spec;
  return e.launch;
}

SpmvOccupancyFn find_spmv_occupancy(DType dtype, int mr, int bits, int pn, int pm) {
  bool spec = false;
  return find_entry(dtype, mr, bits, pn, pm, &spec).occupancy;
}

std::string spmv_unsupported(const SpmvLayout& l, DType dtype, long long m) {
  if (m < 1 || m > 8) return "ew_spmv serves m = 1..8 (got m = " + std::to_string(m) + ")";
  const int xb = spmv_x_bytes(mr_for(m));
  (void)dtype;
  if (span_bytes(l, 1, xb) > kSmemBudget)
    return "ew_spmv: the X span of one 32-slot tile (" + std::to_string(span_bytes(l, 1, xb)) +
           " B) exceeds the shared-memory budget for pattern " + std::to_string(l.n) + ":" + std::to_string(l.m);
  if (l.rows > (1ll << 30) || l.cols > (1ll << 30)) return "ew_spmv: rows and cols must be < 2^30";
  return {};
}

SpmvConfig plan_spmv(const SpmvLayout& l, DType dtype, int m, int sms, SpmvArgs& a, int smem_budget,
                     int max_split) {
  const long long budget = smem_budget > 0 ? smem_budget : kSmemBudget;
  const long long cap = max_split > 0 ? std::min(max_split, 8) : 8;
  SpmvConfig cfg;
  cfg.mr = mr_for(m);
  const int xb = spmv_x_bytes(cfg.mr);
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.pn = l.n;
  a.pm = l.m;
  a.tiles = int(l.tiles);
  a.row_groups = int(l.row_groups);
  const SpmvOccupancyFn occupancy = find_spmv_occupancy(dtype, cfg.mr, l.bits, l.n, l.m);
  const long long row_ctas = (l.rows + kRowsPerCta - 1) / kRowsPerCta;
  // Shared memory and phases for a split of ks CTAs.
  auto shape = [&](long long ks, SpmvArgs& s) {
    s.ksplit = int(ks);
    s.tiles_per_split = int((l.tiles + ks - 1) / ks);
    long long tpp = s.tiles_per_split;
    while (tpp > 1 && span_bytes(l, tpp, xb) > budget) tpp = (tpp + 1) / 2;
    s.tiles_per_phase = int(std::max<long long>(1, tpp));
    long long smem = (span_bytes(l, s.tiles_per_phase, xb) + 15) / 16 * 16;
    if (ks > 1) smem = std::max<long long>(smem, 4ll * kRowsPerCta * cfg.mr);  // fp32 partials
    return int(smem);
  };
  // Split k across a cluster: the largest ks (<= cap, <= tiles) whose grid fits one wave of
  // resident CTAs (a second, partial wave would run alone at the end at a fraction of the HBM
  // bandwidth), and at least 1.
  long long best = 1;
  for (long long ks = 1; ks <= std::min<long long>(cap, std::max<long long>(1, l.tiles)); ++ks) {
    SpmvArgs s = a;
    const int smem = shape(ks, s);
    const int per_sm = occupancy ? std::max(1, occupancy(smem)) : 1;
    if (row_ctas * ks <= (long long)per_sm * sms) best = ks;
  }
  cfg.smem_bytes = shape(best, a);
  bool spec = false;
  find_spmv(dtype, cfg.mr, l.bits, l.n, l.m, &spec);
  cfg.specialised = spec;
  return cfg;
}

}  // namespace sparsenm::cuda::ew

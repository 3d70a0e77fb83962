// sparsenm — EW-N:M SpMM: instance table and plan-time launch configuration.
#include <algorithm>
#include <numeric>

#include "cuda/ew/spmv.hpp"

namespace sparsenm::cuda::ew {

template <class T, int MR, int B, int NN, int MM>
struct SpmmTraits;  // spmm_kernel.cuh
template <class Tr>
void launch_spmm(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream);  // spmm_kernel.cuh

namespace {

constexpr int kSpmmSmemBudget = kSpmmLd * kSpmmRows * 4;

template <class T>
SpmvLaunchFn find_typed(int bits, int pn, int pm, bool* spec) {
  constexpr int MR = kSpmmRows;
#define SPEC(N, M) \
  if (pn == N && pm == M) { *spec = true; return &launch_spmm<SpmmTraits<T, MR, spmv_bits(M), N, M>>; }
#include "cuda/ew/spmv_instances.def"
  // SpMM only (spmm_inst_*_spec.cu): 4:32, and 3:32 (N does not divide the tile: period loop).
  SPEC(4, 32)
  SPEC(3, 32)
#undef SPEC
  *spec = false;
  switch (bits) {
    case 1: return &launch_spmm<SpmmTraits<T, MR, 1, 0, 0>>;
    case 2: return &launch_spmm<SpmmTraits<T, MR, 2, 0, 0>>;
    case 3: return &launch_spmm<SpmmTraits<T, MR, 3, 0, 0>>;
    case 4: return &launch_spmm<SpmmTraits<T, MR, 4, 0, 0>>;
    case 5: return &launch_spmm<SpmmTraits<T, MR, 5, 0, 0>>;
    case 6: return &launch_spmm<SpmmTraits<T, MR, 6, 0, 0>>;
    case 7: return &launch_spmm<SpmmTraits<T, MR, 7, 0, 0>>;
    case 8: return &launch_spmm<SpmmTraits<T, MR, 8, 0, 0>>;
    default: return nullptr;
  }
}

/// Tiles after which a pattern's window phase repeats (N / gcd(N, 32)); the specialised kernel
/// of an N that does not divide the tile needs phases that start at multiples of it.
int tile_period(int pn) { return pn / std::gcd(pn, 32); }

/// Columns of X one phase of `tiles` tiles needs (worst-case window alignment), padded to 4.
long long phase_cols(const SpmvLayout& l, long long tiles) {
  const long long windows = (tiles * 32 + l.n - 1) / l.n + 1;
  return (windows * l.m + 3) / 4 * 4;
}

}  // namespace

SpmvLaunchFn find_spmm(DType dtype, int bits, int pn, int pm, bool* specialised) {
  bool spec = false;
  SpmvLaunchFn f = nullptr;
  switch (dtype) {
    case DType::f16: f = find_typed<__half>(bits, pn, pm, &spec); break;
    case DType::bf16: f = find_typed<__nv_bfloat16>(bits, pn, pm, &spec); break;
    case DType::f32: f = find_typed<float>(bits, pn, pm, &spec); break;
    default: break;
  }
  if (specialised) *specialised = spec;
  return f;
}

std::string spmm_unsupported(const SpmvLayout& l, DType dtype, long long m) {
  if (m < 1) return "ew_spmm needs m >= 1";
  if (m > (1ll << 30) / std::max<long long>(1, l.rows)) return "ew_spmm: m * n must be < 2^30";
  bool spec = false;
  find_spmm(dtype, l.bits, l.n, l.m, &spec);
  if (spec && phase_cols(l, std::min<long long>(tile_period(l.n), l.tiles)) > kSpmmLd)
    return "ew_spmm: the X span of one " + std::to_string(tile_period(l.n)) + "-tile period exceeds the staged pitch";
  if (phase_cols(l, 1) > kSpmmLd)
    return "ew_spmm: the X span of one 32-slot tile (" + std::to_string(phase_cols(l, 1)) +
           " columns) exceeds the staged pitch of " + std::to_string(kSpmmLd) + " columns";
  return {};
}

SpmvConfig plan_spmm(const SpmvLayout& l, DType dtype, int m, SpmvArgs& a, int smem_budget) {
  const long long budget = smem_budget > 0 ? smem_budget : kSpmmSmemBudget;
  const long long es = 4;  // X staged as fp32
  SpmvConfig cfg;
  cfg.mr = kSpmmRows;
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.pn = l.n;
  a.pm = l.m;
  a.tiles = int(l.tiles);
  a.row_groups = int(l.row_groups);
  a.ksplit = 1;
  a.tiles_per_split = a.tiles;
  // Phase: the most tiles whose X span fits the fixed pitch (smem_budget, when given, narrows it
  // further: tests use it to force many phases).
  bool spec = false;
  find_spmm(dtype, l.bits, l.n, l.m, &spec);
  cfg.specialised = spec;
  // A specialised N that does not divide the tile: phases start at multiples of its period.
  const long long period = spec ? tile_period(l.n) : 1;
  const long long cols = std::min<long long>(
      kSpmmLd, std::max<long long>(phase_cols(l, std::min<long long>(period, l.tiles)), budget / (kSpmmRows * es)));
  long long tpp = 1;
  while (tpp < l.tiles && phase_cols(l, tpp + 1) <= cols) ++tpp;
  if (tpp < l.tiles) tpp = std::max(period, tpp / period * period);
  a.tiles_per_phase = int(tpp);
  a.x_ld = kSpmmLd;
  cfg.smem_bytes = int(kSpmmLd * kSpmmRows * es);
  return cfg;
}

}  // namespace sparsenm::cuda::ew

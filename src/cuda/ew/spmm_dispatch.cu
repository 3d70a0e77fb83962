// sparsenm — EW-N:M SpMM: instance table and plan-time launch configuration.
#include <algorithm>
#include <numeric>

#include "cuda/ew/spmv.hpp"

namespace sparsenm::cuda::ew {

template <class T, int MR, int B, int NN, int MM>
struct SpmmTraits;  // spmm_kernel.cuh
template <class Tr>
void launch_spmm(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream);  // spmm_kernel.cuh
template <int B, int NN, int MM, int W, int LD, bool X4>
struct SpmmAsyncTraits;  // spmm_async_kernel.cuh
template <class Tr>
void launch_spmm_async(const SpmvArgs& a, const SpmvConfig& cfg, cudaStream_t stream);  // spmm_async_kernel.cuh

namespace {

/// Pitch (columns) of one X buffer and buffers per CTA of a variant.
int variant_ld(SpmmVariant v) { return v == SpmmVariant::async || v == SpmmVariant::async_x4 ? kSpmmAsyncLd : kSpmmLd; }
int variant_bufs(SpmmVariant v) { return v == SpmmVariant::base ? 1 : 2; }

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

/// The async variants (fp32 only): W warps per CTA, LD columns per X buffer.
template <int W, int LD>
SpmvLaunchFn find_async(int bits, int pn, int pm, bool* spec) {
#define SPEC(N, M) \
  if (pn == N && pm == M) { *spec = true; return &launch_spmm_async<SpmmAsyncTraits<spmv_bits(M), N, M, W, LD, false>>; }
#include "cuda/ew/spmv_instances.def"
  SPEC(4, 32)
  SPEC(3, 32)
#undef SPEC
  *spec = false;
  switch (bits) {
    case 1: return &launch_spmm_async<SpmmAsyncTraits<1, 0, 0, W, LD, false>>;
    case 2: return &launch_spmm_async<SpmmAsyncTraits<2, 0, 0, W, LD, false>>;
    case 3: return &launch_spmm_async<SpmmAsyncTraits<3, 0, 0, W, LD, false>>;
    case 4: return &launch_spmm_async<SpmmAsyncTraits<4, 0, 0, W, LD, false>>;
    case 5: return &launch_spmm_async<SpmmAsyncTraits<5, 0, 0, W, LD, false>>;
    case 6: return &launch_spmm_async<SpmmAsyncTraits<6, 0, 0, W, LD, false>>;
    case 7: return &launch_spmm_async<SpmmAsyncTraits<7, 0, 0, W, LD, false>>;
    case 8: return &launch_spmm_async<SpmmAsyncTraits<8, 0, 0, W, LD, false>>;
    default: return nullptr;
  }
}

/// The x4 layout (spmm_async_inst_x4.cu): 2:4, 4:8, 2:8, 1:8; null otherwise.
SpmvLaunchFn find_x4(int pn, int pm, bool* spec) {
  *spec = true;
  if (pn == 2 && pm == 4) return &launch_spmm_async<SpmmAsyncTraits<2, 2, 4, 8, kSpmmAsyncLd, true>>;
  if (pn == 4 && pm == 8) return &launch_spmm_async<SpmmAsyncTraits<3, 4, 8, 8, kSpmmAsyncLd, true>>;
  if (pn == 2 && pm == 8) return &launch_spmm_async<SpmmAsyncTraits<3, 2, 8, 8, kSpmmAsyncLd, true>>;
  if (pn == 1 && pm == 8) return &launch_spmm_async<SpmmAsyncTraits<3, 1, 8, 8, kSpmmAsyncLd, true>>;
  *spec = false;
  return nullptr;
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

const char* spmm_variant_name(SpmmVariant v) {
  switch (v) {
    case SpmmVariant::async: return "cuda:ew_spmm_async";
    case SpmmVariant::async16: return "cuda:ew_spmm_async16";
    case SpmmVariant::async_x4: return "cuda:ew_spmm_async_x4";
    default: return "cuda:ew_spmm";
  }
}

SpmvLaunchFn find_spmm(DType dtype, int bits, int pn, int pm, bool* specialised, SpmmVariant v) {
  bool spec = false;
  SpmvLaunchFn f = nullptr;
  if (v != SpmmVariant::base) {
    if (dtype == DType::f32)
      f = v == SpmmVariant::async      ? find_async<8, kSpmmAsyncLd>(bits, pn, pm, &spec)
          : v == SpmmVariant::async16 ? find_async<16, kSpmmLd>(bits, pn, pm, &spec)
                                       : find_x4(pn, pm, &spec);
  } else {
    switch (dtype) {
      case DType::f16: f = find_typed<__half>(bits, pn, pm, &spec); break;
      case DType::bf16: f = find_typed<__nv_bfloat16>(bits, pn, pm, &spec); break;
      case DType::f32: f = find_typed<float>(bits, pn, pm, &spec); break;
      default: break;
    }
  }
  if (specialised) *specialised = spec;
  return f;
}

std::string spmm_unsupported(const SpmvLayout& l, DType dtype, long long m, SpmmVariant v) {
  const std::string name = spmm_variant_name(v) + 5;
  if (m < 1) return name + " needs m >= 1";
  if (m > (1ll << 30) / std::max<long long>(1, l.rows)) return name + ": m * n must be < 2^30";
  if (v != SpmmVariant::base && dtype != DType::f32)
    return name + " needs f32 (X is copied to shared memory as is, by cp.async)";
  bool spec = false;
  if (!find_spmm(dtype, l.bits, l.n, l.m, &spec, v))
    return name + ": no compiled instance for " + std::to_string(l.n) + ":" + std::to_string(l.m) +
           (v == SpmmVariant::async_x4 ? " (x4: 2:4, 4:8, 2:8, 1:8 only)" : "");
  const long long ld = variant_ld(v);
  if (spec && phase_cols(l, std::min<long long>(tile_period(l.n), l.tiles)) > ld)
    return name + ": the X span of one " + std::to_string(tile_period(l.n)) + "-tile period exceeds the staged pitch of " +
           std::to_string(ld) + " columns";
  if (v != SpmmVariant::base && !(spec && tile_period(l.n) > 1) && l.tiles > 1 && phase_cols(l, 2) > ld)
    return name + ": the X span of two 32-slot tiles (" + std::to_string(phase_cols(l, 2)) +
           " columns) exceeds the staged pitch of " + std::to_string(ld) + " columns (phases hold tile pairs)";
  if (phase_cols(l, 1) > ld)
    return name + ": the X span of one 32-slot tile (" + std::to_string(phase_cols(l, 1)) +
           " columns) exceeds the staged pitch of " + std::to_string(ld) + " columns";
  return {};
}

SpmvConfig plan_spmm(const SpmvLayout& l, DType dtype, int m, SpmvArgs& a, int smem_budget, SpmmVariant v) {
  const long long ld = variant_ld(v);
  const long long es = 4;  // X staged as fp32
  const long long budget = smem_budget > 0 ? smem_budget : ld * kSpmmRows * es;
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
  find_spmm(dtype, l.bits, l.n, l.m, &spec, v);
  cfg.specialised = spec;
  // A specialised N that does not divide the tile: phases start at multiples of its period.
  const long long period = spec ? tile_period(l.n) : 1;
  // The fewest tiles a phase may hold: a period, or (async kernels) a tile pair.
  const long long least = period > 1 ? period : (v != SpmmVariant::base ? 2 : 1);
  const long long cols = std::min<long long>(
      ld, std::max<long long>(phase_cols(l, std::min<long long>(least, l.tiles)), budget / (kSpmmRows * es)));
  long long tpp = 1;
  while (tpp < l.tiles && phase_cols(l, tpp + 1) <= cols) ++tpp;
  if (tpp < l.tiles) tpp = std::max(period, tpp / period * period);
  // The async kernels' tile pairs cross phases: an even count unless one phase holds the row.
  if (v != SpmmVariant::base && period == 1 && tpp < l.tiles) tpp = tpp / 2 * 2;
  a.tiles_per_phase = int(tpp);
  a.x_ld = int(ld);
  cfg.smem_bytes = int(variant_bufs(v) * ld * kSpmmRows * es);
  return cfg;
}

}  // namespace sparsenm::cuda::ew

// sparsenm — ew_spmv_sk_mb: instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/ew/spmv_skm.hpp"
#include "cuda/ew/spmv_skm_kernel.cuh"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_skm(const SkmArgs& a, const SkmConfig& cfg, cudaStream_t stream);  // spmv_skm_launch.cuh
template <class Tr>
int occupancy_spmv_skm(int smem_bytes);  // spmv_skm_launch.cuh

namespace {

struct Entry {
  SkmLaunchFn launch = nullptr;
  SkmOccupancyFn occupancy = nullptr;
};
template <class T, int MB>
Entry find_typed(int pn, int pm) {
#define SPEC(N, M)                                                                \
  if (pn == N && pm == M) {                                                       \
    using Tr = SkmTraits<T, spmv_bits(M), N, M, MB>;                              \
    return {&launch_spmv_skm<Tr>, &occupancy_spmv_skm<Tr>};                       \
  }
#include "cuda/ew/spmv_instances.def"
#undef SPEC
  return {};
}
Entry find_entry(DType dtype, int pn, int pm, int mb) {
  if (mb != 4 && mb != 8) return {};
  if (dtype == DType::f16) return mb == 4 ? find_typed<__half, 4>(pn, pm) : find_typed<__half, 8>(pn, pm);
  if (dtype == DType::bf16) return mb == 4 ? find_typed<__nv_bfloat16, 4>(pn, pm) : find_typed<__nv_bfloat16, 8>(pn, pm);
  return {};
}

long long tile_cols(const SpmvLayout& l) { return 32 / l.n * l.m; }

int smem_optin() {
  int dev = 0, bytes = 0;
  SPARSENM_CUDA_CHECK(cudaGetDevice(&dev));
  SPARSENM_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return bytes;
}

}  // namespace

SkmLaunchFn find_spmv_skm(DType dtype, int pn, int pm, int mb) { return find_entry(dtype, pn, pm, mb).launch; }
SkmOccupancyFn find_spmv_skm_occupancy(DType dtype, int pn, int pm, int mb) {
  return find_entry(dtype, pn, pm, mb).occupancy;
}

std::string spmv_skm_unsupported(const SpmvLayout& l, DType dtype, long long m) {
  if (m < 2 || m > 8) return "ew_spmv_sk_mb serves m = 2..8 (got m = " + std::to_string(m) + ")";
  if (dtype != DType::f16 && dtype != DType::bf16) return "ew_spmv_sk_mb serves f16 / bf16 only";
  if (l.n <= 0 || 32 % l.n != 0 || !find_spmv_skm(dtype, l.n, l.m, spmv_skm_mb(m)))
    return "ew_spmv_sk_mb: no compiled instance for " + std::to_string(l.n) + ":" + std::to_string(l.m);
  if (l.rows > (1ll << 30) || l.cols > (1ll << 30)) return "ew_spmv_sk_mb: rows and cols must be < 2^30";
  return {};
}

std::size_t spmv_skm_ws_bytes(const SpmvLayout& l, int mb) {
  return std::size_t(l.row_groups) * 32 * std::size_t(mb) * sizeof(float);
}
std::size_t spmv_skm_cnt_bytes(const SpmvLayout& l) { return std::size_t(l.row_groups) * sizeof(unsigned); }

SkmConfig plan_spmv_skm(const SpmvLayout& l, DType dtype, int m, int sms, int min_chunks, SkmArgs& a,
                        int ctas_per_chunk_override, int smem_budget_override) {
  SkmConfig cfg;
  cfg.mb = spmv_skm_mb(m);
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.m = m;
  a.tiles = int(l.tiles);
  a.row_groups = int(l.row_groups);
  a.x_cols = int(l.tiles * tile_cols(l));
  const long long col_bytes = 2ll * cfg.mb;
  const long long budget = (smem_budget_override > 0 ? smem_budget_override : smem_optin()) - kSkmXAlign;
  // The fewest chunks (k ranges of whole tiles) whose X fits the budget; no empty chunk.
  const long long tile_bytes = tile_cols(l) * col_bytes;
  const long long max_tiles = std::max<long long>(1, budget / tile_bytes);
  long long chunks = std::max<long long>(std::max(1, min_chunks), (l.tiles + max_tiles - 1) / max_tiles);
  chunks = std::min<long long>(chunks, std::max<long long>(1, l.tiles));
  const long long chunk_tiles = (l.tiles + chunks - 1) / chunks;
  chunks = (l.tiles + chunk_tiles - 1) / chunk_tiles;
  a.chunks = int(chunks);
  a.chunk_tiles = int(chunk_tiles);
  a.chunk_cols = int(chunk_tiles * tile_cols(l));
  cfg.smem_bytes = int(a.chunk_cols * col_bytes) + kSkmXAlign;  // + the alignment slack of the kernel
  const SkmOccupancyFn occ = find_spmv_skm_occupancy(dtype, l.n, l.m, cfg.mb);
  const long long per_sm = occ ? std::max(1, occ(cfg.smem_bytes)) : 1;
  // One wave split evenly between the chunks, at least two tiles per warp of the smallest chunk.
  const long long last_tiles = l.tiles - (chunks - 1) * chunk_tiles;
  const long long by_work = std::max<long long>(1, l.row_groups * last_tiles / (2 * 16));
  long long per_chunk = std::min<long long>(std::max<long long>(1, per_sm * sms / chunks), by_work);
  if (ctas_per_chunk_override > 0) per_chunk = ctas_per_chunk_override;
  a.ctas_per_chunk = int(per_chunk);
  cfg.grid = int(chunks * per_chunk);
  return cfg;
}

}  // namespace sparsenm::cuda::ew

// sparsenm — ew_spmv_sk: instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/ew/spmv_sk.hpp"
#include "cuda/ew/spmv_sk_kernel.cuh"
#include "format/sk_grid_order.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::cuda::ew {

template <class Tr>
void launch_spmv_sk(const SkArgs& a, const SkConfig& cfg, cudaStream_t stream);  // spmv_sk_launch.cuh
template <class Tr>
int occupancy_spmv_sk(int smem_bytes);  // spmv_sk_launch.cuh

namespace {

struct Entry {
  SkLaunchFn launch = nullptr;
  SkOccupancyFn occupancy = nullptr;
};
template <class T, int RING, bool IREG = false, int WARPS = 8, bool GRID = false>
Entry find_typed(int pn, int pm) {
#define SPEC(N, M)                                                                                   \
  if (pn == N && pm == M) {                                                                          \
    using Tr = SkTraits<T, spmv_bits(M), N, M, kSkXBulk, true, kSkEndSerial, RING, -1, 0, IREG, WARPS, GRID>; \
    return {&launch_spmv_sk<Tr>, &occupancy_spmv_sk<Tr>};                         \
  }
#include "cuda/ew/spmv_sk_instances.def"
#undef SPEC
  return {};
}
template <class T>
Entry find_ring(int pn, int pm, int ring, bool vals_only, int warps, bool grid) {
  if (grid) {  // the grid-ordered forms: sk, skr, skw
    if (!vals_only && warps == 8 && ring == 0) return find_typed<T, 0, false, 8, true>(pn, pm);
    if (!vals_only && warps == 8 && ring == 3) return find_typed<T, 3, false, 8, true>(pn, pm);
    if (vals_only && warps == 32 && ring == 3) return find_typed<T, 3, true, 32, true>(pn, pm);
    return {};
  }
  if (vals_only && ring == 3 && warps == 8) return find_typed<T, 3, true>(pn, pm);
  if (vals_only && ring == 3 && warps == 32) return find_typed<T, 3, true, 32>(pn, pm);
  if (vals_only || warps != 8) return {};
  if (ring == 0) return find_typed<T, 0>(pn, pm);
  if (ring == 3) return find_typed<T, 3>(pn, pm);
  if (ring == 4) return find_typed<T, 4>(pn, pm);
  return {};
}
Entry find_entry(DType dtype, int pn, int pm, int ring, bool vals_only, int warps, bool grid) {
  if (dtype == DType::f16) return find_ring<__half>(pn, pm, ring, vals_only, warps, grid);
  if (dtype == DType::bf16) return find_ring<__nv_bfloat16>(pn, pm, ring, vals_only, warps, grid);
  return {};
}

/// Columns of X kept in shared memory: up to the end of the last tile's last window (a tile may end
/// mid-window when N does not divide 32: ceil).
long long x_cols(const SpmvLayout& l) { return (l.tiles * 32 + l.n - 1) / l.n * l.m; }

}  // namespace

SkLaunchFn find_spmv_sk(DType dtype, int pn, int pm, int ring, bool vals_only, int warps, bool grid) {
  return find_entry(dtype, pn, pm, ring, vals_only, warps, grid).launch;
}
SkOccupancyFn find_spmv_sk_occupancy(DType dtype, int pn, int pm, int ring, bool vals_only, int warps, bool grid) {
  return find_entry(dtype, pn, pm, ring, vals_only, warps, grid).occupancy;
}

void spmv_sk_grid_order(SpmvPacked& p, SkArgs& a) {
  const SpmvLayout& l = p.layout;
  // The kernel computes slots in 32 bits (2^31 tiles would be > 4 TB of weight).
  if (a.units >= (1ll << 31) || a.warps_total < 1)
    throw InvalidArgument("weight", "the grid order needs fewer than 2^31 tiles and a planned grid");
  ::sparsenm::detail::sk_grid_reorder(p.values, std::size_t(l.vecs) * 32 * 16, a.units, a.warps_total);
  ::sparsenm::detail::sk_grid_reorder(p.indices, std::size_t(l.bits) * 32, a.units, a.warps_total);
  a.grid_lmin = a.units / a.warps_total;
}

std::string spmv_sk_unsupported(const SpmvLayout& l, DType dtype, long long m) {
  if (m != 1) return "ew_spmv_sk serves m = 1 only (got m = " + std::to_string(m) + ")";
  if (dtype != DType::f16 && dtype != DType::bf16) return "ew_spmv_sk serves f16 / bf16 only";
  if (!find_spmv_sk(dtype, l.n, l.m))
    return "ew_spmv_sk: no compiled instance for " + std::to_string(l.n) + ":" + std::to_string(l.m);
  if (x_cols(l) * 2 > kSkMaxXBytes)
    return "ew_spmv_sk: X (" + std::to_string(x_cols(l) * 2) + " B) exceeds the shared-memory budget of " +
           std::to_string(kSkMaxXBytes) + " B";
  if (l.rows > (1ll << 30) || l.cols > (1ll << 30)) return "ew_spmv_sk: rows and cols must be < 2^30";
  return {};
}

std::size_t spmv_sk_ws_bytes(const SpmvLayout& l) { return std::size_t(l.row_groups) * 32 * sizeof(float); }
std::size_t spmv_sk_cnt_bytes(const SpmvLayout& l) { return std::size_t(l.row_groups) * sizeof(unsigned); }

int spmv_sk_ring_offset(const SpmvLayout& l) { return int((x_cols(l) * 2 + 127) / 128 * 128); }
int spmv_sk_smem_bytes(const SpmvLayout& l, int ring, bool vals_only, int warps) {
  if (ring == 0) return int((x_cols(l) * 2 + 15) / 16 * 16);
  return spmv_sk_ring_offset(l) + warps * ring * (l.vecs * 32 * 16 + (vals_only ? 0 : l.bits * 32 * 4));
}

SkConfig plan_spmv_sk(const SpmvLayout& l, DType dtype, int sms, int waves, SkArgs& a, int grid_override, int ring,
                      bool vals_only, int warps) {
  SkConfig cfg;
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.tiles = int(l.tiles);
  a.row_groups = int(l.row_groups);
  a.units = (long long)l.row_groups * l.tiles;
  a.x_cols = int(x_cols(l));
  a.ring_off = ring > 0 ? spmv_sk_ring_offset(l) : 0;
  cfg.smem_bytes = spmv_sk_smem_bytes(l, ring, vals_only, warps);
  // The grid-ordered instance has the same registers and shared memory (only unit addresses differ):
  // the plain form's occupancy sets the grid, so both orders of one form run the same grid.
  const SkOccupancyFn occ = find_spmv_sk_occupancy(dtype, l.n, l.m, ring, vals_only, warps);
  const long long per_sm = occ ? std::max(1, occ(cfg.smem_bytes)) : 1;
  // At least two tiles per warp (the two-tile register ring; the shared-memory ring uses the same
  // grid), at most `waves` waves.
  const long long by_work = std::max<long long>(1, a.units / (2 * warps));
  long long grid = std::min<long long>(per_sm * sms * std::max(1, waves), by_work);
  if (grid_override > 0) grid = grid_override;
  cfg.grid = int(grid);
  a.warps_total = cfg.grid * warps;
  return cfg;
}

}  // namespace sparsenm::cuda::ew

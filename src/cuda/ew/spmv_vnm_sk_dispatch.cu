// sparsenm — vnm_spmv_sk (spmv_vnm_sk.hpp): instance table and plan-time launch configuration.
#include <algorithm>

#include "cuda/ew/spmv_sk_kernel.cuh"
#include "cuda/ew/spmv_vnm_sk.hpp"
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
template <class T, int VM, int RING>
Entry entry() {
  using Tr = VnmSkTraits<T, VM, RING>;
  return {&launch_spmv_sk<Tr>, &occupancy_spmv_sk<Tr>};
}
template <class T>
Entry find_typed(int vm, int ring) {
  if (vm == 8 && ring == 0) return entry<T, 8, 0>();
  if (vm == 8 && ring == 3) return entry<T, 8, 3>();
  if (vm == 16 && ring == 0) return entry<T, 16, 0>();
  if (vm == 16 && ring == 3) return entry<T, 16, 3>();
  return {};
}
Entry find_entry(DType dtype, int vm, int ring) {
  if (dtype == DType::f16) return find_typed<__half>(vm, ring);
  if (dtype == DType::bf16) return find_typed<__nv_bfloat16>(vm, ring);
  return {};
}

long long x_cols(const ::sparsenm::detail::VnmSkLayout& l) { return l.tiles * (::sparsenm::detail::kVnmSkSlots / 2) * l.m; }
int x_bytes128(const ::sparsenm::detail::VnmSkLayout& l) { return int((x_cols(l) * 2 + 127) / 128 * 128); }
constexpr int kStageFixed = 32 * 16 * 4 + 2 * 32 * 4 + 32;  // values (2-byte dtype) + index words + table
static_assert(VnmSkTraits<__half, 8, 3>::kTileBytes == kStageFixed, "ring stage of the V:2:M form");
int gather_offset(const ::sparsenm::detail::VnmSkLayout& l, int ring) { return x_bytes128(l) + 8 * ring * kStageFixed; }

}  // namespace

SkLaunchFn find_vnm_sk(DType dtype, int vm, int ring) { return find_entry(dtype, vm, ring).launch; }
SkOccupancyFn find_vnm_sk_occupancy(DType dtype, int vm, int ring) { return find_entry(dtype, vm, ring).occupancy; }

int vnm_sk_smem_bytes(const ::sparsenm::detail::VnmSkLayout& l, int ring) {
  return gather_offset(l, ring) + 8 * VnmSkTraits<__half, 8, 0>::kGatherBytes;
}

std::string vnm_sk_unsupported(const FormatLayout& f, DType dtype, long long m, int ring) {
  const std::string name = ring > 0 ? "vnm_spmv_skr" : "vnm_spmv_sk";
  if (m != 1) return name + " serves m = 1 only (got m = " + std::to_string(m) + ")";
  ::sparsenm::detail::VnmSkLayout l;
  try {
    l = ::sparsenm::detail::VnmSkLayout::of(f, dtype);
  } catch (const InvalidArgument& e) {
    return name + ": " + e.what();
  }
  if (!find_vnm_sk(dtype, l.m, ring))
    return name + ": no compiled instance for " + f.pattern.str() + " (M = 8 and 16 are compiled)";
  if (x_cols(l) * 2 > kSkMaxXBytes)
    return name + ": X (" + std::to_string(x_cols(l) * 2) + " B) exceeds the shared-memory budget of " +
           std::to_string(kSkMaxXBytes) + " B";
  if (l.rows > (1ll << 30) || l.cols > (1ll << 30)) return name + ": rows and cols must be < 2^30";
  return {};
}

SkConfig plan_vnm_sk(const ::sparsenm::detail::VnmSkLayout& l, DType dtype, int sms, int ring, SkArgs& a, int grid_override) {
  SkConfig cfg;
  a.n = int(l.rows);
  a.k = int(l.cols);
  a.tiles = int(l.tiles);
  a.row_groups = int(l.row_groups);
  a.units = (long long)l.row_groups * l.tiles;
  a.x_cols = int(x_cols(l));
  a.ring_off = ring > 0 ? x_bytes128(l) : 0;
  a.slab_groups = l.slab_groups;
  a.gather_off = gather_offset(l, ring);
  cfg.smem_bytes = vnm_sk_smem_bytes(l, ring);
  const SkOccupancyFn occ = find_vnm_sk_occupancy(dtype, l.m, ring);
  const long long per_sm = occ ? std::max(1, occ(cfg.smem_bytes)) : 1;
  // As ew_spmv_sk: one wave of resident CTAs, at least two tiles per warp.
  const long long by_work = std::max<long long>(1, a.units / (2 * 8));
  long long grid = std::min<long long>(per_sm * sms, by_work);
  if (grid_override > 0) grid = grid_override;
  cfg.grid = int(grid);
  a.warps_total = cfg.grid * 8;
  return cfg;
}

}  // namespace sparsenm::cuda::ew

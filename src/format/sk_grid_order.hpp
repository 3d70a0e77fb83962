// sparsenm — internal: the grid order of a stream-K weight (SkTraits::GRID in
// src/cuda/ew/spmv_sk_kernel.cuh; docs/PERF.md, ew_spmv session 7b). Host code, CPU-testable
// (tests/test_sk_grid_order.cpp).
//
// The stream-K kernels cut the flattened unit (= packed tile) sequence 0 .. U-1 into W contiguous
// ranges, warp w taking [w U / W, (w + 1) U / W): lmin = U / W or lmin + 1 units each (the long
// warps). In the packed order warp w's step q reads unit w U / W + q, so at any instant the grid's
// requests are spread over W distant tiles. The grid order stores the unit of step q of warp w at
//   slot q W + w                            for q < lmin (every warp has these steps),
//   slot lmin W + (w U / W - w lmin)        for the long warps' last step q = lmin,
// where w U / W - w lmin counts the long warps before w (each range is lmin or lmin + 1 long). At a
// step every warp reads the tile beside its neighbour's: the grid sweeps the buffer as a plain
// read does. It is a bijection of 0 .. U-1 (the first lmin W slots are the full steps, the last
// U - lmin W the long warps, in warp order), fixed by W, i.e. by the plan's grid.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sparsenm::detail {

/// First unit of warp w's range (the kernels' split: w U / W).
inline std::int64_t sk_range_begin(std::int64_t units, std::int64_t warps, std::int64_t w) noexcept {
  return w * units / warps;
}

/// The warp whose range holds unit u (0 <= u < units).
std::int64_t sk_warp_of(std::int64_t units, std::int64_t warps, std::int64_t u) noexcept;

/// Slot of unit u in the grid order of `warps` warps (header comment).
std::int64_t sk_grid_slot(std::int64_t units, std::int64_t warps, std::int64_t u) noexcept;

/// Reorders `data` (units tiles of tile_elems elements each, in the packed unit order) into the grid
/// order of `warps` warps. Throws InvalidArgument unless data.size() == units * tile_elems, warps >= 1.
template <class E>
void sk_grid_reorder(std::vector<E>& data, std::size_t tile_elems, std::int64_t units, std::int64_t warps);

extern template void sk_grid_reorder(std::vector<std::byte>&, std::size_t, std::int64_t, std::int64_t);
extern template void sk_grid_reorder(std::vector<std::uint32_t>&, std::size_t, std::int64_t, std::int64_t);

}  // namespace sparsenm::detail

// sparsenm — internal: the grid order of a stream-K weight (see sk_grid_order.hpp).
#include "format/sk_grid_order.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "sparsenm/error.hpp"

namespace sparsenm::detail {

std::int64_t sk_warp_of(std::int64_t units, std::int64_t warps, std::int64_t u) noexcept {
  // begin(w) <= u < begin(w + 1)  <=>  w U < (u + 1) W <= (w + 1) U  <=>  w = ceil((u + 1) W / U) - 1.
  return ((u + 1) * warps - 1) / units;
}

std::int64_t sk_grid_slot(std::int64_t units, std::int64_t warps, std::int64_t u) noexcept {
  const std::int64_t w = sk_warp_of(units, warps, u), u0 = sk_range_begin(units, warps, w);
  const std::int64_t lmin = units / warps, q = u - u0;
  return q < lmin ? q * warps + w : lmin * warps + (u0 - w * lmin);
}

template <class E>
void sk_grid_reorder(std::vector<E>& data, std::size_t tile_elems, std::int64_t units, std::int64_t warps) {
  if (warps < 1) throw InvalidArgument("warps", "the grid order needs at least one warp (got " + std::to_string(warps) + ")");
  if (units < 0 || data.size() != std::size_t(units) * tile_elems)
    throw InvalidArgument("data", "the grid order needs units x tile_elems elements (" + std::to_string(data.size()) +
                                      " != " + std::to_string(units) + " x " + std::to_string(tile_elems) + ")");
  std::vector<E> out(data.size());
  // Warp by warp (no division per unit): step q of warp w goes to its slot.
  const std::int64_t lmin = units / warps;
#pragma omp parallel for schedule(static) if (units > (1 << 14))
  for (std::int64_t w = 0; w < warps; ++w) {
    const std::int64_t u0 = sk_range_begin(units, warps, w), u1 = sk_range_begin(units, warps, w + 1);
    for (std::int64_t q = 0; q < u1 - u0; ++q) {
      const std::int64_t slot = q < lmin ? q * warps + w : lmin * warps + (u0 - w * lmin);
      std::copy_n(data.data() + std::size_t(u0 + q) * tile_elems, tile_elems, out.data() + std::size_t(slot) * tile_elems);
    }
  }
  data.swap(out);
}

template void sk_grid_reorder(std::vector<std::byte>&, std::size_t, std::int64_t, std::int64_t);
template void sk_grid_reorder(std::vector<std::uint32_t>&, std::size_t, std::int64_t, std::int64_t);

}  // namespace sparsenm::detail

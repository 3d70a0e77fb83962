// sparsenm prune — top-n selection inside one window.
//
// Order: larger key first; at equal keys the lower position wins. Results are positions in
// ascending order. Two forms:
//   select_top_composite: integer keys made unique by packing the position into the low bits
//     (composite = ((key << pbits) | (count - 1 - pos)) + 1, so 0 is free as "taken"); for
//     n <= 4 it runs n max-reductions over the window (vectorisable, no branches on data), else
//     one nth_element. Used by element patterns (keys from common.hpp).
//   select_top: any totally ordered key (double scores of vector/block patterns).
#pragma once
#include <algorithm>
#include <cstdint>

namespace sparsenm::prune_detail {

/// Bits needed to store a position 0..m-1 (at least 1).
constexpr int position_bits(int m) noexcept {
  int b = 1;
  while ((1 << b) < m) ++b;
  return b;
}

/// Sorts a few positions ascending (n is small; insertion sort).
inline void sort_small(int* p, int n) noexcept {
  for (int i = 1; i < n; ++i) {
    int v = p[i], j = i - 1;
    while (j >= 0 && p[j] > v) {
      p[j + 1] = p[j];
      --j;
    }
    p[j + 1] = v;
  }
}

/// c[0..count) holds composites (see above; every one >= 1 and distinct). Writes the positions
/// of the n largest, ascending, to out. Destroys c. 1 <= n <= count <= 256.
template <class C>
inline void select_top_composite(C* c, int count, int n, int pbits, int* out) noexcept {
  const C pmask = (C(1) << pbits) - 1;
  if (n <= 4) {
    for (int s = 0; s < n; ++s) {
      C best = 0;
      for (int i = 0; i < count; ++i) best = c[i] > best ? c[i] : best;
      int pos = count - 1 - int((best - 1) & pmask);
      out[s] = pos;
      c[pos] = 0;
    }
  } else {
    std::nth_element(c, c + (n - 1), c + count, [](C a, C b) { return a > b; });
    for (int s = 0; s < n; ++s) out[s] = count - 1 - int((c[s] - 1) & pmask);
  }
  if (n <= 8) {
    sort_small(out, n);
  } else {
    std::sort(out, out + n);
  }
}

/// Positions of the n best of key[0..count) (larger key first, ties: lower position), ascending.
/// scratch: room for count ints. 1 <= n <= count <= 256 (count <= 2^16 works too).
template <class K>
inline void select_top(const K* key, int count, int n, int* out, int* scratch) noexcept {
  if (n == count) {
    for (int i = 0; i < n; ++i) out[i] = i;
    return;
  }
  auto better = [key](int a, int b) { return key[a] > key[b] || (!(key[b] > key[a]) && a < b); };
  if (n <= 4) {
    // n passes; a chosen position is skipped by comparing against those already chosen.
    for (int s = 0; s < n; ++s) {
      int best = -1;
      for (int i = 0; i < count; ++i) {
        bool taken = false;
        for (int t = 0; t < s; ++t) taken |= out[t] == i;
        if (!taken && (best < 0 || key[i] > key[best])) best = i;
      }
      out[s] = best;
    }
    sort_small(out, n);
    return;
  }
  for (int i = 0; i < count; ++i) scratch[i] = i;
  std::nth_element(scratch, scratch + (n - 1), scratch + count, better);
  std::copy(scratch, scratch + n, out);
  std::sort(out, out + n);
}

}  // namespace sparsenm::prune_detail

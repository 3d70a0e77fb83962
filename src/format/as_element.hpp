// sparsenm — internal: a V:2:M weight seen as the element 2:M weight with the same stored slots.
//
// A venom row stores 2 values per M-column window, at 2 of the slab's 4 selected columns, so
// every V:2:M weight is also an element 2:M weight: same values array (window order, ascending
// columns), indices rewritten from "position among the 4 selected columns" (2 bits) to "column in
// the window" (ceil(log2 M) bits). The stored slots, padding slots included, are kept exactly,
// so products agree slot for slot (FORMAT.md section 8: Inf / NaN in X at pruned positions still
// contribute nothing). Costs 1 - 1.5 more index bits per value (5-11 % more bytes at M = 8-16);
// the EW kernels use it where they are faster than the V:N:M ones (the plan races both).
#pragma once
#include "sparsenm/format.hpp"

namespace sparsenm::detail {

/// The element 2:M form of a venom V:2:M weight. Throws InvalidArgument (naming `w`) for any
/// other pattern.
CondensedMatrix venom_as_element(const CondensedMatrix& w);

}  // namespace sparsenm::detail

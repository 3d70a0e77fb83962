// sparsenm — canonical condensed weights (format.hpp) -> the 2:4 operand of the sparse tensor
// cores (layout.hpp). Host-only, plain C++ (used by the CUDA plan code and the CPU tests).
#pragma once
#include <string>

#include "cuda/sptc/layout.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm::sptc {

/// Empty when `w` can run on the sparse tensor cores as hardware 2:4: f16/bf16 values and a
/// hw24 or element pattern whose every aligned group of 4 columns holds at most 2 stored
/// nonzero values (stored zeros are dropped). Else the reason.
std::string hw24_unsupported(const CondensedMatrix& w);

/// Repacks `w` (see hw24_unsupported) into the tensor-core layout with rows padded to
/// `row_align`. Throws InvalidArgument when unsupported.
Packed24 pack_hw24(const CondensedMatrix& w, int row_align);

/// Empty when `w` (a V:2:M venom weight) can run on the sparse tensor cores: f16/bf16 values,
/// storage matching the layout. Else the reason.
std::string venom_unsupported(const CondensedMatrix& w);

/// A V:2:M weight as a gathered 2:4 problem (see layout.hpp): `a` is 2:4 over the sparse-k axis
/// K = windows * 4 * slabs_per_group, and gather[g][j] (g = row group of group_rows rows, j <
/// a.k_pad) is the column of X that sparse-k index j of group g reads, or -1 (a zero row of B).
/// group_rows (64 or 128) is the CTA's row tile. When V >= group_rows every group lies inside one
/// slab (slabs_per_group = 1: sparse-k index w*4+i is selected column i of window w). When
/// V < group_rows (V = 32 with 64-row groups, V = 64 or 32 with 128-row groups) a group holds
/// S = group_rows / V slabs and window w owns S groups of 4 along sparse-k: group w*S + s holds
/// slab s's 4 columns; a row of slab s keeps its 2 values there and padding (0, 1, zero values)
/// in the other S-1 groups, so it costs S times the tensor-core work of the V >= group_rows case.
struct PackedVnm {
  Packed24 a;
  int group_rows = 0, slabs_per_group = 1;
  std::int64_t groups = 0;           ///< a.rows_pad / group_rows
  std::vector<std::int32_t> gather;  ///< [groups][a.k_pad]
};

/// Throws InvalidArgument when venom_unsupported(w) is not empty or group_rows is not 64/128.
/// row_align: multiple of group_rows and 64 (the packed rows are padded to it).
PackedVnm pack_venom(const CondensedMatrix& w, int group_rows, int row_align);

}  // namespace sparsenm::sptc

// sparsenm — canonical condensed weights (format.hpp) -> the 2:4 operand of the sparse tensor
// cores (layout.hpp). Host-only, plain C++ (used by the CUDA plan code and the CPU tests).
#pragma once
#include <string>

#include "cuda/sptc/layout.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm::sptc {

/// Empty when `w` can run on the sparse tensor cores as hardware 2:4: f16/bf16 values and a
/// hw24, element N:M or venom V:2:M pattern whose every aligned group of 4 columns holds at most
/// 2 stored nonzero values (stored zeros are dropped). Always true for hw24, element N:M with
/// n <= 2 and m % 4 == 0, and venom with m % 4 == 0 (each window is whole aligned groups of 4
/// and stores 2 values); else checked row by row. Else the reason. A venom weight repacked this
/// way stores 2 values per group of 4 (more value bytes than its V:2:M form for m > 4) and needs
/// no gather.
std::string hw24_unsupported(const CondensedMatrix& w);

/// Repacks `w` (see hw24_unsupported; venom weights included) into the tensor-core layout with rows padded to
/// `row_align`. Throws InvalidArgument when unsupported.
Packed24 pack_hw24(const CondensedMatrix& w, int row_align);

/// Empty when `w` (a V:2:M venom weight) can run on the sparse tensor cores: f16/bf16 values,
/// storage matching the layout. Else the reason.
std::string venom_unsupported(const CondensedMatrix& w);

/// A V:2:M weight as a gathered 2:4 problem (see layout.hpp): `a` is 2:4 over the sparse-k axis
/// K = windows * 4 (sparse-k index w*4+i is selected column i of window w), and gather[g][j]
/// (g = group of group_rows packed rows, j < a.k_pad) is the column of X that sparse-k index j of
/// group g reads, or -1 (a zero row of B). group_rows (64 or 128) is the CTA's row tile; each
/// group lies inside one slab. V >= group_rows (V % group_rows == 0): packed row = weight row.
/// V = 32 with 64-row groups ("spread"): slab s occupies packed rows 64s .. 64s+31 and rows
/// 64s+32 .. 64s+63 are padding (zero values), so a 64-row wgmma never mixes two slabs' columns;
/// it costs twice the tensor-core work of V >= 64, but a row never multiplies another slab's
/// X columns (sharing a tile between slabs would need padding slots on real X columns, and
/// 0 * Inf / NaN there would break the format's rule that pruned positions contribute nothing).
struct PackedVnm {
  Packed24 a;                        ///< a.rows = packed rows (spread: 64 per slab)
  int group_rows = 0;
  int rows_per_group = 0;            ///< weight rows per group: group_rows, or 32 when spread
  std::int64_t groups = 0;           ///< a.rows_pad / group_rows
  std::vector<std::int32_t> gather;  ///< [groups][a.k_pad]
  /// Weight row of packed row pr, or -1 for a padding row.
  std::int64_t weight_row(std::int64_t pr, std::int64_t rows) const {
    const std::int64_t r = (pr / group_rows) * rows_per_group + pr % group_rows;
    return (pr % group_rows) < rows_per_group && r < rows ? r : -1;
  }
};

/// Throws InvalidArgument when venom_unsupported(w) is not empty, group_rows is not 64/128, or
/// V < group_rows except V = 32 with group_rows 64. row_align: multiple of group_rows.
PackedVnm pack_venom(const CondensedMatrix& w, int group_rows, int row_align);

}  // namespace sparsenm::sptc

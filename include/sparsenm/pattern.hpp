// sparsenm — N:M sparsity patterns (nmSPARSE Fig. 1 granularities, VENOM's V:N:M, hardware 2:4).
//
// Conventions (DESIGN.md): a weight W is [rows = n, cols = k]; sparsity runs along k.
//   element  "N:M"          N nonzeros in every window of M consecutive columns, per row.
//   vector   "N:M/vwV"      V adjacent rows share the same N positions per window.
//   block    "N:M/bwRxC"    blocks of R rows x C columns; N of every M blocks along k kept.
//   venom    "V:2:M"        per V x M block 4 columns kept (shared by the V rows), then 2:4 in
//                           each row among those 4 (density 2/M). V in {32, 64, 128, 256}.
//   hw24     "2:4/hw"       hardware 2:4: element 2:4 meant for the sparse tensor cores.
// Limits: 1 <= N < M <= 256. Text forms round-trip: Pattern::parse(p.str()) == p.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sparsenm {

enum class Granularity : std::uint8_t { element, vector, block, venom, hw24 };

std::string_view to_string(Granularity g) noexcept;  // "ew", "vw", "bw", "vnm", "hw24"

struct Pattern {
  Granularity kind = Granularity::element;
  int n = 2;   ///< kept per window (venom: always 2, of the 4 selected columns)
  int m = 4;   ///< window length: columns (element, vector, venom, hw24) or blocks (block)
  int v = 1;   ///< vector: rows sharing positions; venom: V (rows per slab); else 1
  int bn = 1;  ///< block: rows per block; else 1
  int bk = 1;  ///< block: columns per block; else 1

  static Pattern element(int n, int m);
  static Pattern vector(int n, int m, int v);
  static Pattern block(int n, int m, int bn, int bk);
  static Pattern venom(int v, int m);
  static Pattern hw24();

  /// Parses the text forms above; throws InvalidArgument naming `argument` and the rule.
  static Pattern parse(std::string_view text, std::string_view argument = "pattern");
  std::string str() const;
  /// Throws InvalidArgument if a field breaks the rules (N >= M, M > 256, V not supported, ...).
  void validate(std::string_view argument = "pattern") const;

  /// Columns spanned by one window along k: m (element/vector/venom/hw24) or m * bk (block).
  int window_cols() const noexcept { return kind == Granularity::block ? m * bk : m; }
  /// Rows that share one index set: 1 (element, hw24), v (vector, venom), bn (block).
  int row_group() const noexcept;
  /// Stored values per row per window: n (element/vector/hw24), n * bk (block), 2 (venom).
  int values_per_window() const noexcept;
  /// Fraction of weights kept: n / m (venom: 2 / m).
  double density() const noexcept { return double(kind == Granularity::venom ? 2 : n) / m; }
  /// Bits of one packed in-window index: ceil(log2 m), at least 1.
  int index_bits() const noexcept;

  friend bool operator==(const Pattern&, const Pattern&) = default;
};

}  // namespace sparsenm

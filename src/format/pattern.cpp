// sparsenm — Pattern: factories, validation, text forms (see include/sparsenm/pattern.hpp).
//
// Grammar (strict: no spaces, no signs, case-sensitive; numbers are decimal digit runs):
//   pattern := NUM ':' NUM                      element   N:M
//            | NUM ':' NUM '/vw' NUM            vector    N:M/vwV
//            | NUM ':' NUM '/bw' NUM 'x' NUM    block     N:M/bwRxC
//            | NUM ':' NUM ':' NUM              venom     V:2:M
//            | NUM ':' NUM '/hw'                hw24      2:4/hw
// Parsing checks the syntax; validate() then checks the numbers, so both report through
// InvalidArgument naming the caller's argument.
#include "sparsenm/pattern.hpp"

#include <string>

#include "sparsenm/error.hpp"

namespace sparsenm {

std::string_view to_string(Granularity g) noexcept {
  switch (g) {
    case Granularity::element: return "ew";
    case Granularity::vector: return "vw";
    case Granularity::block: return "bw";
    case Granularity::venom: return "vnm";
    case Granularity::hw24: return "hw24";
  }
  return "?";
}

namespace {

constexpr int kMaxM = 256;
constexpr int kMaxGroup = 256;

std::string num(int x) { return std::to_string(x); }

[[noreturn]] void fail(std::string_view argument, const std::string& rule) {
  throw InvalidArgument(std::string(argument), rule);
}

void require_unused(std::string_view argument, const char* field, int value, const char* kind) {
  if (value != 1)
    fail(argument, std::string(field) + " must be 1 for " + kind + " patterns (got " + num(value) + ")");
}

void check_n_m(std::string_view argument, int n, int m) {
  if (n < 1) fail(argument, "N must be >= 1 (got N = " + num(n) + ")");
  if (m > kMaxM) fail(argument, "M must be <= 256 (got M = " + num(m) + ")");
  if (n >= m) fail(argument, "N must be < M (got " + num(n) + ":" + num(m) + ")");
}

// ---- a tiny cursor over the text ----
struct Cursor {
  std::string_view text;
  std::size_t pos = 0;
  std::string_view argument;

  bool done() const noexcept { return pos == text.size(); }
  bool eat(std::string_view token) noexcept {
    if (text.substr(pos, token.size()) != token) return false;
    pos += token.size();
    return true;
  }
  [[noreturn]] void syntax(const std::string& what) const {
    fail(argument, what + " at offset " + std::to_string(pos) +
                       "; expected one of N:M, N:M/vwV, N:M/bwRxC, V:2:M, 2:4/hw (got '" +
                       std::string(text) + "')");
  }
  /// A run of decimal digits; rejects numbers that do not fit (anything >= 10^9).
  int number(const char* what) {
    std::size_t start = pos;
    long long value = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      value = value * 10 + (text[pos] - '0');
      if (value >= 1000000000LL) {
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
        fail(argument, std::string(what) + " '" + std::string(text.substr(start, pos - start)) +
                           "' is too large (got '" + std::string(text) + "')");
      }
      ++pos;
    }
    if (pos == start) syntax(std::string("missing number ") + what);
    return int(value);
  }
};

}  // namespace

Pattern Pattern::element(int n, int m) {
  Pattern p;
  p.kind = Granularity::element;
  p.n = n;
  p.m = m;
  p.validate();
  return p;
}

Pattern Pattern::vector(int n, int m, int v) {
  Pattern p;
  p.kind = Granularity::vector;
  p.n = n;
  p.m = m;
  p.v = v;
  p.validate();
  return p;
}

Pattern Pattern::block(int n, int m, int bn, int bk) {
  Pattern p;
  p.kind = Granularity::block;
  p.n = n;
  p.m = m;
  p.bn = bn;
  p.bk = bk;
  p.validate();
  return p;
}

Pattern Pattern::venom(int v, int m) {
  Pattern p;
  p.kind = Granularity::venom;
  p.n = 2;
  p.m = m;
  p.v = v;
  p.validate();
  return p;
}

Pattern Pattern::hw24() {
  Pattern p;
  p.kind = Granularity::hw24;
  p.n = 2;
  p.m = 4;
  return p;
}

void Pattern::validate(std::string_view argument) const {
  switch (kind) {
    case Granularity::element:
      check_n_m(argument, n, m);
      require_unused(argument, "V", v, "element (N:M)");
      require_unused(argument, "block rows", bn, "element (N:M)");
      require_unused(argument, "block cols", bk, "element (N:M)");
      return;
    case Granularity::vector:
      check_n_m(argument, n, m);
      if (v < 2 || v > kMaxGroup)
        fail(argument, "vector length V of N:M/vwV must be in 2..256 (got " + num(v) + ")");
      require_unused(argument, "block rows", bn, "vector (N:M/vwV)");
      require_unused(argument, "block cols", bk, "vector (N:M/vwV)");
      return;
    case Granularity::block:
      check_n_m(argument, n, m);
      if (bn < 1 || bn > kMaxGroup)
        fail(argument, "block rows R of N:M/bwRxC must be in 1..256 (got " + num(bn) + ")");
      if (bk < 1 || bk > kMaxGroup)
        fail(argument, "block cols C of N:M/bwRxC must be in 1..256 (got " + num(bk) + ")");
      require_unused(argument, "V", v, "block (N:M/bwRxC)");
      return;
    case Granularity::venom:
      if (n != 2) fail(argument, "V:N:M needs N = 2 (got N = " + num(n) + ")");
      if (m < 4) fail(argument, "V:2:M needs M >= 4 (got M = " + num(m) + ")");
      if (m > kMaxM) fail(argument, "M must be <= 256 (got M = " + num(m) + ")");
      if (v != 32 && v != 64 && v != 128 && v != 256)
        fail(argument, "V of V:2:M must be 32, 64, 128 or 256 (got V = " + num(v) + ")");
      require_unused(argument, "block rows", bn, "venom (V:2:M)");
      require_unused(argument, "block cols", bk, "venom (V:2:M)");
      return;
    case Granularity::hw24:
      if (n != 2 || m != 4)
        fail(argument, "hardware 2:4 (2:4/hw) must be 2:4 (got " + num(n) + ":" + num(m) + ")");
      require_unused(argument, "V", v, "hardware 2:4 (2:4/hw)");
      require_unused(argument, "block rows", bn, "hardware 2:4 (2:4/hw)");
      require_unused(argument, "block cols", bk, "hardware 2:4 (2:4/hw)");
      return;
  }
  fail(argument, "unknown granularity " + num(int(kind)));
}

Pattern Pattern::parse(std::string_view text, std::string_view argument) {
  Cursor c{text, 0, argument};
  if (text.empty()) c.syntax("empty pattern");
  Pattern p;
  int a = c.number("N");
  if (!c.eat(":")) c.syntax("expected ':'");
  int b = c.number("M");
  if (c.eat(":")) {  // V:N:M
    int m = c.number("M");
    if (!c.done()) c.syntax("trailing characters");
    p.kind = Granularity::venom;
    p.v = a;
    p.n = b;
    p.m = m;
  } else if (c.done()) {
    p.kind = Granularity::element;
    p.n = a;
    p.m = b;
  } else if (c.eat("/vw")) {
    p.kind = Granularity::vector;
    p.n = a;
    p.m = b;
    p.v = c.number("V");
  } else if (c.eat("/bw")) {
    p.kind = Granularity::block;
    p.n = a;
    p.m = b;
    p.bn = c.number("R");
    if (!c.eat("x")) c.syntax("expected 'x' between block rows and cols");
    p.bk = c.number("C");
  } else if (c.eat("/hw")) {
    p.kind = Granularity::hw24;
    p.n = a;
    p.m = b;
  } else if (c.text[c.pos] == '/') {
    c.syntax("unknown suffix");
  } else {
    c.syntax("trailing characters");
  }
  if (!c.done()) c.syntax("trailing characters");
  p.validate(argument);
  return p;
}

std::string Pattern::str() const {
  std::string nm = num(n) + ":" + num(m);
  switch (kind) {
    case Granularity::element: return nm;
    case Granularity::vector: return nm + "/vw" + num(v);
    case Granularity::block: return nm + "/bw" + num(bn) + "x" + num(bk);
    case Granularity::venom: return num(v) + ":" + nm;
    case Granularity::hw24: return nm + "/hw";
  }
  return nm + "/?";
}

int Pattern::row_group() const noexcept {
  switch (kind) {
    case Granularity::vector:
    case Granularity::venom: return v;
    case Granularity::block: return bn;
    default: return 1;
  }
}

int Pattern::values_per_window() const noexcept {
  switch (kind) {
    case Granularity::block: return n * bk;
    case Granularity::venom: return 2;
    default: return n;
  }
}

int Pattern::index_bits() const noexcept {
  int b = 1;
  while (b < 31 && (1 << b) < m) ++b;
  return b;
}

}  // namespace sparsenm

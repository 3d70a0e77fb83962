// Pattern: factories, text round trips, derived numbers, every validation error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/pattern.hpp"

using namespace sparsenm;

namespace {

/// Expects `f` to throw InvalidArgument whose argument() is `argument` and whose message
/// contains every needle.
template <class F>
void expect_invalid(F f, const std::string& argument, std::vector<std::string> needles, const std::string& ctx) {
  try {
    f();
    ADD_FAILURE() << ctx << ": no exception";
  } catch (const PatternViolation&) {
    ADD_FAILURE() << ctx << ": PatternViolation is the wrong type here";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), argument) << ctx;
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(argument + ": ", 0), 0u) << ctx << ": " << what;
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << ctx << ": '" << n << "' not in " << what;
  }
}

void expect_parse_error(const std::string& text, std::vector<std::string> needles) {
  expect_invalid([&] { Pattern::parse(text, "--pattern"); }, "--pattern", needles, "parse('" + text + "')");
}

TEST(Pattern, ParseFields) {
  Pattern e = Pattern::parse("2:8");
  EXPECT_EQ(e.kind, Granularity::element);
  EXPECT_EQ(e.n, 2);
  EXPECT_EQ(e.m, 8);
  EXPECT_EQ(e, Pattern::element(2, 8));

  Pattern v = Pattern::parse("3:16/vw8");
  EXPECT_EQ(v.kind, Granularity::vector);
  EXPECT_EQ(v.n, 3);
  EXPECT_EQ(v.m, 16);
  EXPECT_EQ(v.v, 8);
  EXPECT_EQ(v, Pattern::vector(3, 16, 8));

  Pattern b = Pattern::parse("1:4/bw2x3");
  EXPECT_EQ(b.kind, Granularity::block);
  EXPECT_EQ(b.bn, 2);
  EXPECT_EQ(b.bk, 3);
  EXPECT_EQ(b.v, 1);
  EXPECT_EQ(b, Pattern::block(1, 4, 2, 3));

  Pattern vn = Pattern::parse("64:2:10");
  EXPECT_EQ(vn.kind, Granularity::venom);
  EXPECT_EQ(vn.v, 64);
  EXPECT_EQ(vn.n, 2);
  EXPECT_EQ(vn.m, 10);
  EXPECT_EQ(vn, Pattern::venom(64, 10));

  Pattern h = Pattern::parse("2:4/hw");
  EXPECT_EQ(h.kind, Granularity::hw24);
  EXPECT_EQ(h, Pattern::hw24());
  EXPECT_NE(h, Pattern::element(2, 4));
  EXPECT_EQ(Pattern{}, Pattern::element(2, 4));  // the default is element 2:4
}

TEST(Pattern, TextRoundTrip) {
  const char* texts[] = {"1:2",     "2:4",      "1:4",       "2:8",       "3:7",      "255:256",   "1:256",
                         "2:4/vw2", "4:16/vw8", "2:8/vw256", "1:4/bw1x1", "2:4/bw2x3", "7:9/bw256x256",
                         "32:2:4",  "64:2:7",   "128:2:16",  "256:2:256", "2:4/hw"};
  for (const char* t : texts) {
    Pattern p = Pattern::parse(t);
    EXPECT_EQ(p.str(), t);
    EXPECT_EQ(Pattern::parse(p.str()), p) << t;
    EXPECT_NO_THROW(p.validate());
  }
  // exhaustive over small element / vector / venom forms
  for (int m = 2; m <= 256; m += (m < 20 ? 1 : 37))
    for (int n = 1; n < m; n += (n < 10 ? 1 : 29)) {
      for (Pattern p : {Pattern::element(n, m), Pattern::vector(n, m, 2 + n % 200), Pattern::block(n, m, 1 + m % 5, 1 + n % 3)})
        ASSERT_EQ(Pattern::parse(p.str()), p) << p.str();
    }
  for (int v : {32, 64, 128, 256})
    for (int m : {4, 5, 8, 100, 256}) ASSERT_EQ(Pattern::parse(Pattern::venom(v, m).str()), Pattern::venom(v, m));
  EXPECT_EQ(Pattern::parse("02:04"), Pattern::element(2, 4));  // leading zeros are just digits
}

TEST(Pattern, DerivedNumbers) {
  EXPECT_EQ(to_string(Granularity::element), "ew");
  EXPECT_EQ(to_string(Granularity::vector), "vw");
  EXPECT_EQ(to_string(Granularity::block), "bw");
  EXPECT_EQ(to_string(Granularity::venom), "vnm");
  EXPECT_EQ(to_string(Granularity::hw24), "hw24");

  Pattern e = Pattern::element(3, 7), v = Pattern::vector(2, 8, 16), b = Pattern::block(2, 5, 4, 3),
          vn = Pattern::venom(128, 10), h = Pattern::hw24();
  EXPECT_EQ(e.row_group(), 1);
  EXPECT_EQ(v.row_group(), 16);
  EXPECT_EQ(b.row_group(), 4);
  EXPECT_EQ(vn.row_group(), 128);
  EXPECT_EQ(h.row_group(), 1);
  EXPECT_EQ(e.values_per_window(), 3);
  EXPECT_EQ(v.values_per_window(), 2);
  EXPECT_EQ(b.values_per_window(), 6);
  EXPECT_EQ(vn.values_per_window(), 2);
  EXPECT_EQ(h.values_per_window(), 2);
  EXPECT_EQ(e.window_cols(), 7);
  EXPECT_EQ(b.window_cols(), 15);
  EXPECT_EQ(vn.window_cols(), 10);
  EXPECT_DOUBLE_EQ(e.density(), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(b.density(), 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(vn.density(), 0.2);
  EXPECT_DOUBLE_EQ(h.density(), 0.5);

  const std::pair<int, int> bits[] = {{2, 1}, {3, 2}, {4, 2}, {5, 3}, {8, 3}, {9, 4}, {16, 4}, {17, 5},
                                      {100, 7}, {128, 7}, {129, 8}, {256, 8}};
  for (auto [m, b_] : bits) EXPECT_EQ(Pattern::element(1, m).index_bits(), b_) << "m " << m;
  EXPECT_EQ(Pattern::venom(32, 10).index_bits(), 4);  // the in-window column index (see FORMAT.md)
}

TEST(Pattern, ValidationErrorsNameTheRule) {
  auto factory = [](auto f, std::vector<std::string> needles, const std::string& ctx) {
    expect_invalid(f, "pattern", needles, ctx);
  };
  factory([] { Pattern::element(4, 4); }, {"N must be < M", "4:4"}, "element 4:4");
  factory([] { Pattern::element(5, 4); }, {"N must be < M"}, "element 5:4");
  factory([] { Pattern::element(0, 4); }, {"N must be >= 1", "0"}, "element 0:4");
  factory([] { Pattern::element(-1, 4); }, {"N must be >= 1"}, "element -1:4");
  factory([] { Pattern::element(2, 257); }, {"M must be <= 256", "257"}, "element 2:257");
  factory([] { Pattern::vector(2, 4, 1); }, {"vwV", "2..256", "got 1"}, "vw1");
  factory([] { Pattern::vector(2, 4, 257); }, {"vwV", "2..256", "257"}, "vw257");
  factory([] { Pattern::vector(4, 4, 4); }, {"N must be < M"}, "vw 4:4");
  factory([] { Pattern::block(2, 4, 0, 1); }, {"block rows", "1..256", "got 0"}, "bw0x1");
  factory([] { Pattern::block(2, 4, 1, 0); }, {"block cols", "1..256", "got 0"}, "bw1x0");
  factory([] { Pattern::block(2, 4, 257, 1); }, {"block rows", "257"}, "bw257x1");
  factory([] { Pattern::block(2, 4, 1, 300); }, {"block cols", "300"}, "bw1x300");
  factory([] { Pattern::block(2, 300, 1, 1); }, {"M must be <= 256"}, "bw M 300");
  factory([] { Pattern::venom(48, 8); }, {"V of V:2:M", "32, 64, 128 or 256", "48"}, "venom V 48");
  factory([] { Pattern::venom(16, 8); }, {"V of V:2:M"}, "venom V 16");
  factory([] { Pattern::venom(512, 8); }, {"V of V:2:M"}, "venom V 512");
  factory([] { Pattern::venom(32, 3); }, {"M >= 4", "3"}, "venom M 3");
  factory([] { Pattern::venom(32, 257); }, {"M must be <= 256"}, "venom M 257");

  Pattern p = Pattern::venom(32, 8);
  p.n = 3;
  expect_invalid([&] { p.validate("w"); }, "w", {"N = 2", "got N = 3"}, "venom N 3");
  Pattern h = Pattern::hw24();
  h.m = 8;
  expect_invalid([&] { h.validate(); }, "pattern", {"must be 2:4", "2:8"}, "hw 2:8");
  h = Pattern::hw24();
  h.v = 2;
  expect_invalid([&] { h.validate(); }, "pattern", {"V must be 1"}, "hw v");
  Pattern e = Pattern::element(2, 4);
  e.bk = 2;
  expect_invalid([&] { e.validate(); }, "pattern", {"block cols must be 1"}, "element bk");
  e = Pattern::element(2, 4);
  e.v = 8;
  expect_invalid([&] { e.validate(); }, "pattern", {"V must be 1"}, "element v");
  Pattern vv = Pattern::vector(2, 4, 4);
  vv.bn = 2;
  expect_invalid([&] { vv.validate(); }, "pattern", {"block rows must be 1"}, "vector bn");
  Pattern bb = Pattern::block(2, 4, 2, 2);
  bb.v = 2;
  expect_invalid([&] { bb.validate(); }, "pattern", {"V must be 1"}, "block v");
  Pattern vn = Pattern::venom(32, 8);
  vn.bk = 4;
  expect_invalid([&] { vn.validate(); }, "pattern", {"block cols must be 1"}, "venom bk");
  Pattern bad_kind;
  bad_kind.kind = Granularity(9);
  expect_invalid([&] { bad_kind.validate(); }, "pattern", {"unknown granularity"}, "kind 9");
}

TEST(Pattern, ParseRangeErrors) {
  expect_parse_error("4:4", {"N must be < M"});
  expect_parse_error("0:4", {"N must be >= 1"});
  expect_parse_error("2:300", {"M must be <= 256"});
  expect_parse_error("2:4/vw1", {"2..256"});
  expect_parse_error("2:4/vw0", {"2..256"});
  expect_parse_error("2:4/vw512", {"2..256"});
  expect_parse_error("2:4/bw0x2", {"block rows"});
  expect_parse_error("2:4/bw2x0", {"block cols"});
  expect_parse_error("2:4/bw2x999", {"block cols"});
  expect_parse_error("48:2:8", {"32, 64, 128 or 256"});
  expect_parse_error("32:3:8", {"N = 2"});
  expect_parse_error("32:2:3", {"M >= 4"});
  expect_parse_error("32:2:2", {"M >= 4"});
  expect_parse_error("32:2:300", {"M must be <= 256"});
  expect_parse_error("2:8/hw", {"must be 2:4"});
  expect_parse_error("1:4/hw", {"must be 2:4"});
}

TEST(Pattern, ParseSyntaxErrors) {
  for (const char* bad : {"", "abc", "2", "2:", ":4", "2;4", "2:4/", "2:4/xx", "2:4/vw", "2:4/bw2", "2:4/bw2x",
                          "2:4/bwx2", "2:4 ", " 2:4", "2 :4", "2:4/vw4x", "2:4junk", "32:2:8/vw4", "+2:4", "-2:4",
                          "2:-4", "2:4:", "2:4/hwx", "2:4/VW4", "2:4/Hw", "2:4/bw2X2", "1.5:4", "2:4\n", "2:4/vw4/vw4",
                          "0x2:4", "2:4/hw/hw", "::"}) {
    expect_parse_error(bad, {"expected one of", "'" + std::string(bad) + "'"});
  }
  // a NUL byte inside the view is trailing junk, not a terminator
  expect_invalid([] { Pattern::parse(std::string_view("2:4\0x", 5)); }, "pattern", {"trailing"}, "NUL");
}

TEST(Pattern, ParseNumberOverflow) {
  // Numbers that do not fit must be rejected, never wrap around into a valid pattern.
  expect_parse_error("99999999999999999999:4", {"too large"});
  expect_parse_error("2:4294967298", {"too large"});          // 2^32 + 2 would wrap to 2
  expect_parse_error("2:4/vw4294967300", {"too large"});     // 2^32 + 4
  expect_parse_error("2:4/bw1x18446744073709551617", {"too large"});
  expect_parse_error("4294967328:2:8", {"too large"});        // 2^32 + 32
  expect_parse_error("1000000000:4", {"too large"});
  expect_parse_error("999999999:4", {"N must be < M"});       // fits: then the range rule applies
}

TEST(Pattern, ParseDefaultArgumentName) {
  try {
    Pattern::parse("nope");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "pattern");
    EXPECT_NE(std::string(e.what()).find("N:M/bwRxC"), std::string::npos);
  }
}

}  // namespace

namespace {

TEST(Pattern, RandomTextNeverMisbehaves) {
  // Random strings over the grammar's alphabet: each either parses to a valid pattern whose
  // str() parses back to it, or throws InvalidArgument naming the argument. Nothing else.
  const char alphabet[] = "0123456789::://vwbxh x2\0";
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string t;
    const int len = int(next() % 12);
    for (int k = 0; k < len; ++k) t.push_back(alphabet[next() % (sizeof alphabet - 1)]);
    try {
      Pattern p = Pattern::parse(t, "fuzz");
      ASSERT_NO_THROW(p.validate());
      ASSERT_EQ(Pattern::parse(p.str()), p) << t;
      ++parsed;
    } catch (const InvalidArgument& e) {
      ASSERT_EQ(e.argument(), "fuzz") << t;
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace

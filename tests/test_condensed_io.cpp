// Condensed weights in safetensors: store/load round trips for every granularity and dtype, the
// exact metadata, and rejection of every inconsistency between metadata, tensors and layout.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"
#include "support/random_pattern.hpp"

using namespace sparsenm;

namespace {

CondensedMatrix sample(const std::string& pattern, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const Pattern p = Pattern::parse(pattern);
  DenseMatrix d = random_pattern_matrix(p, t, rows, cols, seed, 0.1);
  return condense(d.view(), p);
}

void expect_equal(const CondensedMatrix& a, const CondensedMatrix& b) {
  EXPECT_EQ(a.layout, b.layout);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_TRUE(a.values == b.values);
  EXPECT_TRUE(a.indices == b.indices);
  EXPECT_TRUE(a.columns == b.columns);
}

/// Serialises and parses again, so every load below reads what a file would hold.
SafetensorsFile through_bytes(const SafetensorsFile& f) { return parse_safetensors(serialize_safetensors(f)); }

std::string load_error(const SafetensorsFile& f, const std::string& name) {
  try {
    load_condensed(f, name);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

Tensor* find_mut(SafetensorsFile& f, const std::string& name) {
  for (auto& t : f.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void erase(SafetensorsFile& f, const std::string& name) {
  std::erase_if(f.tensors, [&](const Tensor& t) { return t.name == name; });
}

nlohmann::json meta_of(const SafetensorsFile& f, const std::string& name) {
  return nlohmann::json::parse(f.metadata.at("sparsenm:" + name));
}

}  // namespace

TEST(CondensedIo, RoundTripEveryGranularityAndDType) {
  const char* patterns[] = {"2:4", "1:8", "3:16", "2:8/vw4", "1:4/bw2x4", "2:4/bw3x2", "32:2:8", "64:2:16", "2:4/hw"};
  const DType dtypes[] = {DType::f16, DType::bf16, DType::f32};
  std::uint64_t seed = 11;
  for (const char* pat : patterns)
    for (DType t : dtypes) {
      SCOPED_TRACE(std::string(pat) + " " + std::string(to_string(t)));
      const CondensedMatrix c = sample(pat, t, 37, 45, seed++);
      SafetensorsFile f;
      f.add(Tensor{"bias", DType::f32, {3}, std::vector<std::byte>(12, std::byte{1})});
      store_condensed(f, "layers.0.w", c);
      const bool venom = c.pattern().kind == Granularity::venom;
      EXPECT_EQ(f.tensors.size(), venom ? 4u : 3u);
      const SafetensorsFile g = through_bytes(f);
      const CondensedMatrix back = load_condensed(g, "layers.0.w");
      expect_equal(c, back);
      const DenseMatrix a = expand(c), b = expand(back);
      EXPECT_TRUE(a.bytes() == b.bytes());
      EXPECT_EQ(condensed_names(g), std::vector<std::string>{"layers.0.w"});
      // Tensor shapes and dtypes are those of FORMAT.md.
      const Tensor* v = g.find("layers.0.w.values");
      const Tensor* i = g.find("layers.0.w.indices");
      ASSERT_TRUE(v && i);
      EXPECT_EQ(v->dtype, t);
      EXPECT_EQ(v->shape, (std::vector<std::int64_t>{c.layout.rows, c.layout.value_cols}));
      EXPECT_EQ(i->dtype, DType::u8);
      EXPECT_EQ(i->shape, (std::vector<std::int64_t>{c.layout.index_rows, c.layout.index_row_bytes}));
      const Tensor* col = g.find("layers.0.w.columns");
      ASSERT_EQ(col != nullptr, venom);
      if (col) {
        EXPECT_EQ(col->dtype, DType::u8);
        EXPECT_EQ(col->shape, (std::vector<std::int64_t>{c.layout.colloc_rows, c.layout.colloc_row_bytes}));
      }
    }
}

TEST(CondensedIo, MetadataIsExact) {
  SafetensorsFile f;
  store_condensed(f, "w", sample("2:8", DType::f16, 37, 45, 1));
  store_condensed(f, "v", sample("128:2:8", DType::bf16, 130, 19, 2));
  EXPECT_EQ(f.metadata.at("sparsenm:w"), R"({"cols":45,"dtype":"f16","format_version":1,"pattern":"2:8","rows":37})");
  EXPECT_EQ(f.metadata.at("sparsenm:v"),
            R"({"cols":19,"dtype":"bf16","format_version":1,"pattern":"128:2:8","rows":130})");
  f.metadata["other"] = "x";
  f.metadata["sparsenm:"] = "{}";  // no name: not a weight
  EXPECT_EQ(condensed_names(f), (std::vector<std::string>{"v", "w"}));
}

TEST(CondensedIo, StoreRejectsBadRequests) {
  const CondensedMatrix c = sample("2:4", DType::f16, 8, 8, 3);
  SafetensorsFile f;
  EXPECT_THROW(store_condensed(f, "", c), InvalidArgument);
  store_condensed(f, "w", c);
  EXPECT_THROW(store_condensed(f, "w", c), InvalidArgument);  // already stored
  SafetensorsFile g;
  g.add(Tensor{"x.values", DType::u8, {1}, std::vector<std::byte>(1)});
  EXPECT_THROW(store_condensed(g, "x", c), InvalidArgument);  // would clobber a tensor
  CondensedMatrix bad = c;
  std::fill(bad.indices.begin(), bad.indices.end(), std::uint8_t{0});  // positions not ascending
  SafetensorsFile h;
  EXPECT_THROW(store_condensed(h, "w", bad), InvalidArgument);
  EXPECT_TRUE(h.tensors.empty());
  EXPECT_TRUE(h.metadata.empty());
}

TEST(CondensedIo, LoadRejectsInconsistentMetadata) {
  SafetensorsFile base;
  store_condensed(base, "w", sample("2:8", DType::f16, 37, 45, 4));
  auto with_meta = [&](const std::string& text) {
    SafetensorsFile f = base;
    f.metadata["sparsenm:w"] = text;
    return load_error(f, "w");
  };
  auto with_field = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json m = meta_of(base, "w");
    if (value.is_null()) m.erase(key);
    else m[key] = value;
    return with_meta(m.dump());
  };
  struct Case {
    std::string got;
    const char* expect;
  };
  const Case cases[] = {
      {load_error(base, "nope"), "no metadata key 'sparsenm:nope'"},
      {with_meta("{not json"), "not a JSON object"},
      {with_meta("[1,2]"), "not a JSON object"},
      {with_field("format_version", nullptr), "format_version"},
      {with_field("format_version", 2), "unsupported format_version 2"},
      {with_field("format_version", "1"), "format_version"},
      {with_field("pattern", nullptr), "\"pattern\""},
      {with_field("pattern", "2:9x"), "bad pattern"},
      {with_field("pattern", "9:8"), "bad pattern"},
      {with_field("pattern", 28), "\"pattern\""},
      {with_field("dtype", "i32"), "must be f32, f16 or bf16"},
      {with_field("dtype", "float8"), "bad dtype"},
      {with_field("dtype", nullptr), "\"dtype\""},
      {with_field("rows", nullptr), "\"rows\""},
      {with_field("rows", 0), "\"rows\" must be in 1..2^40"},
      {with_field("rows", -37), "\"rows\" must be in 1..2^40"},
      {with_field("rows", 1ll << 50), "\"rows\" must be in 1..2^40"},
      {with_field("rows", 18446744073709551615ull), "\"rows\" must be in 1..2^40"},
      {with_field("rows", 37.0), "\"rows\" must be an integer"},
      {with_field("cols", "45"), "\"cols\" must be an integer"},
      {with_field("rows", 36), "has shape [37, 12], expected [36, 12]"},
      {with_field("rows", 1ll << 40), "inconsistent metadata"},
      {with_field("cols", 1ll << 40), "inconsistent metadata"},
      {with_field("cols", (1ll << 40) + 1), "\"cols\" must be in 1..2^40"},
      {with_field("cols", 60), "expected [37, 16]"},
      {with_field("dtype", "bf16"), "has dtype f16, expected bf16"},
      {with_field("pattern", "2:4"), "expected"},
      {with_field("pattern", "64:2:8"), "'w.indices' has shape [37, 5], expected [37, 3]"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(c.got.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << c.got;
    EXPECT_EQ(c.got.rfind("condensed weight '", 0), 0u) << c.got;
  }
}

TEST(CondensedIo, LoadRejectsInconsistentTensors) {
  SafetensorsFile base;
  store_condensed(base, "w", sample("2:8", DType::f16, 37, 41, 5));
  store_condensed(base, "v", sample("32:2:8", DType::f32, 40, 20, 6));
  ASSERT_NO_THROW(load_condensed(base, "w"));
  ASSERT_NO_THROW(load_condensed(base, "v"));
  {
    SafetensorsFile f = base;
    erase(f, "w.indices");
    EXPECT_NE(load_error(f, "w").find("'w.indices' is missing"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    erase(f, "v.columns");
    EXPECT_NE(load_error(f, "v").find("'v.columns' is missing"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    f.add(Tensor{"w.columns", DType::u8, {1, 1}, std::vector<std::byte>(1)});
    EXPECT_NE(load_error(f, "w").find("present but pattern 2:8 has no column locations"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    Tensor* t = find_mut(f, "w.indices");
    t->dtype = DType::i32;  // same bytes, wrong type
    t->shape = {t->shape[0], t->shape[1] / 4};
    t->data.resize(std::size_t(t->shape[0] * t->shape[1] * 4));
    EXPECT_NE(load_error(f, "w").find("has dtype i32, expected u8"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    Tensor* t = find_mut(f, "w.indices");
    t->shape = {t->shape[1], t->shape[0]};  // transposed
    EXPECT_NE(load_error(f, "w").find("'w.indices' has shape"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    Tensor* t = find_mut(f, "v.columns");
    t->shape.push_back(1);
    EXPECT_NE(load_error(f, "v").find("'v.columns' has shape"), std::string::npos);
  }
  {
    SafetensorsFile f = base;
    find_mut(f, "w.values")->data.pop_back();  // an in-memory file whose data disagrees with its shape
    EXPECT_NE(load_error(f, "w").find("bytes, expected"), std::string::npos);
  }
  {
    // Indices that are not strictly ascending inside a window: validate() must catch it.
    SafetensorsFile f = base;
    auto& d = find_mut(f, "w.indices")->data;
    std::fill(d.begin(), d.end(), std::byte{0});
    const std::string e = load_error(f, "w");
    EXPECT_NE(e.find("condensed weight 'w'"), std::string::npos) << e;
    EXPECT_NE(e.find("(no error)"), 0u);
  }
  {
    // cols = 41 with 2:8: the last window has one real column, so one slot per row is padding
    // and must hold 0. Make one nonzero.
    SafetensorsFile f = base;
    const CondensedMatrix c = load_condensed(base, "w");
    std::int64_t slot = -1;
    for (std::int64_t s = 0; s < c.layout.value_cols; ++s)
      if (c.column_of(0, s) >= c.cols()) slot = s;
    ASSERT_GE(slot, 0);
    auto& vals = find_mut(f, "w.values")->data;
    const std::uint16_t one = float_to_fp16_bits(1.0f);
    std::memcpy(vals.data() + slot * 2, &one, 2);
    EXPECT_NE(load_error(f, "w"), "(no error)");
  }
  {
    // V:N:M column locations out of order.
    SafetensorsFile f = base;
    auto& d = find_mut(f, "v.columns")->data;
    std::fill(d.begin(), d.end(), std::byte{0xff});
    EXPECT_NE(load_error(f, "v"), "(no error)");
  }
}

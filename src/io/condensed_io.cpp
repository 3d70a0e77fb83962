// Condensed weights inside safetensors files (docs/FORMAT.md, "Storage in safetensors").
//
//   "<name>.values"   dtype of the weight, shape [rows, value_cols]
//   "<name>.indices"  U8, shape [index_rows, index_row_bytes]
//   "<name>.columns"  U8, shape [colloc_rows, colloc_row_bytes]   (venom only)
//   __metadata__["sparsenm:<name>"] = {"cols":k,"dtype":"f16","format_version":1,"pattern":"2:8","rows":n}
//
// The metadata is the source of truth for the layout; load_condensed recomputes FormatLayout from
// it and requires every tensor to match exactly, then runs CondensedMatrix::validate.
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"

namespace sparsenm {

namespace {

constexpr const char* kPrefix = "sparsenm:";
constexpr int kFormatVersion = 1;
// Far beyond any real weight; keeps FormatLayout arithmetic away from overflow on hostile input.
constexpr std::int64_t kMaxDim = std::int64_t(1) << 40;

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw FormatError("condensed weight '" + name + "': " + what);
}

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

const Tensor& require(const SafetensorsFile& file, const std::string& name, const std::string& suffix, DType dtype,
                      std::int64_t rows, std::int64_t cols) {
  const Tensor* t = file.find(name + suffix);
  if (!t) fail(name, "tensor '" + name + suffix + "' is missing");
  if (t->dtype != dtype)
    fail(name, "tensor '" + name + suffix + "' has dtype " + std::string(to_string(t->dtype)) + ", expected " +
                   std::string(to_string(dtype)));
  const std::vector<std::int64_t> want{rows, cols};
  if (t->shape != want)
    fail(name, "tensor '" + name + suffix + "' has shape " + shape_str(t->shape) + ", expected " + shape_str(want));
  if (t->data.size() != std::size_t(rows) * std::size_t(cols) * dtype_size(dtype))
    fail(name, "tensor '" + name + suffix + "' holds " + std::to_string(t->data.size()) + " bytes, expected " +
                   std::to_string(std::size_t(rows) * std::size_t(cols) * dtype_size(dtype)));
  return *t;
}

std::int64_t dim_field(const nlohmann::json& meta, const std::string& name, const char* key) {
  auto it = meta.find(key);
  if (it == meta.end()) fail(name, std::string("metadata lacks \"") + key + "\"");
  std::int64_t v = 0;
  if (it->is_number_unsigned()) {
    if (it->get<std::uint64_t>() > std::uint64_t(kMaxDim)) v = -1;
    else v = std::int64_t(it->get<std::uint64_t>());
  } else if (it->is_number_integer()) {
    v = it->get<std::int64_t>();
  } else {
    fail(name, std::string("metadata \"") + key + "\" must be an integer (got " + it->dump() + ")");
  }
  if (v < 1 || v > kMaxDim)
    fail(name, std::string("metadata \"") + key + "\" must be in 1..2^40 (got " + it->dump() + ")");
  return v;
}

}  // namespace

void store_condensed(SafetensorsFile& file, const std::string& name, const CondensedMatrix& w) {
  if (name.empty()) throw InvalidArgument("name", "must not be empty");
  if (!is_weight_dtype(w.dtype))
    throw InvalidArgument("w.dtype", "must be f32, f16 or bf16 (got " + std::string(to_string(w.dtype)) + ")");
  try {
    w.validate();
  } catch (const FormatError& e) {
    throw InvalidArgument("w", std::string("is not a valid condensed matrix: ") + e.what());
  }
  const std::string key = kPrefix + name;
  if (file.metadata.count(key)) throw InvalidArgument("name", "condensed weight '" + name + "' is already stored");
  const FormatLayout& L = w.layout;
  const bool venom = L.pattern.kind == Granularity::venom;
  for (const char* suffix : {".values", ".indices", ".columns"})
    if (file.find(name + suffix))
      throw InvalidArgument("name", "tensor '" + name + suffix + "' already exists in the file");

  Tensor values{name + ".values", w.dtype, {L.rows, L.value_cols}, w.values};
  Tensor indices{name + ".indices", DType::u8, {L.index_rows, L.index_row_bytes}, {}};
  indices.data.resize(w.indices.size());
  if (!w.indices.empty()) std::memcpy(indices.data.data(), w.indices.data(), w.indices.size());
  file.add(std::move(values));
  file.add(std::move(indices));
  if (venom) {
    Tensor columns{name + ".columns", DType::u8, {L.colloc_rows, L.colloc_row_bytes}, {}};
    columns.data.resize(w.columns.size());
    if (!w.columns.empty()) std::memcpy(columns.data.data(), w.columns.data(), w.columns.size());
    file.add(std::move(columns));
  }
  nlohmann::json meta = {{"pattern", L.pattern.str()},
                         {"rows", L.rows},
                         {"cols", L.cols},
                         {"dtype", std::string(to_string(w.dtype))},
                         {"format_version", kFormatVersion}};
  file.metadata[key] = meta.dump();
}

CondensedMatrix load_condensed(const SafetensorsFile& file, const std::string& name) {
  auto it = file.metadata.find(kPrefix + name);
  if (it == file.metadata.end()) fail(name, "not found (no metadata key 'sparsenm:" + name + "')");
  nlohmann::json meta = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) fail(name, "metadata is not a JSON object");

  auto ver = meta.find("format_version");
  if (ver == meta.end() || !ver->is_number_integer())
    fail(name, "metadata lacks an integer \"format_version\"");
  if (ver->get<std::int64_t>() != kFormatVersion)
    fail(name, "unsupported format_version " + ver->dump() + " (this build reads " + std::to_string(kFormatVersion) + ")");

  auto pat = meta.find("pattern");
  if (pat == meta.end() || !pat->is_string()) fail(name, "metadata lacks a string \"pattern\"");
  Pattern p;
  try {
    p = Pattern::parse(pat->get<std::string>(), "pattern");
  } catch (const InvalidArgument& e) {
    fail(name, std::string("bad pattern in metadata: ") + e.what());
  }

  auto dt = meta.find("dtype");
  if (dt == meta.end() || !dt->is_string()) fail(name, "metadata lacks a string \"dtype\"");
  DType dtype;
  try {
    dtype = parse_dtype(dt->get<std::string>(), "dtype");
  } catch (const InvalidArgument& e) {
    fail(name, std::string("bad dtype in metadata: ") + e.what());
  }
  if (!is_weight_dtype(dtype))
    fail(name, "metadata dtype must be f32, f16 or bf16 (got " + dt->get<std::string>() + ")");

  const std::int64_t rows = dim_field(meta, name, "rows");
  const std::int64_t cols = dim_field(meta, name, "cols");
  FormatLayout L;
  try {
    L = FormatLayout::of(p, rows, cols);
  } catch (const InvalidArgument& e) {
    fail(name, std::string("inconsistent metadata: ") + e.what());
  }

  // The tensors must match the layout exactly. Check the values shape before anything sizes
  // memory from the (untrusted) metadata.
  const Tensor& values = require(file, name, ".values", dtype, L.rows, L.value_cols);
  const Tensor& indices = require(file, name, ".indices", DType::u8, L.index_rows, L.index_row_bytes);
  const bool venom = p.kind == Granularity::venom;
  const Tensor* columns = nullptr;
  if (venom)
    columns = &require(file, name, ".columns", DType::u8, L.colloc_rows, L.colloc_row_bytes);
  else if (file.find(name + ".columns"))
    fail(name, "tensor '" + name + ".columns' is present but pattern " + p.str() + " has no column locations");

  CondensedMatrix c;
  c.layout = L;
  c.dtype = dtype;
  c.values = values.data;
  c.indices.resize(indices.data.size());
  if (!indices.data.empty()) std::memcpy(c.indices.data(), indices.data.data(), indices.data.size());
  if (columns) {
    c.columns.resize(columns->data.size());
    if (!columns->data.empty()) std::memcpy(c.columns.data(), columns->data.data(), columns->data.size());
  }
  try {
    c.validate();
  } catch (const FormatError& e) {
    fail(name, e.what());
  }
  return c;
}

std::vector<std::string> condensed_names(const SafetensorsFile& file) {
  std::vector<std::string> names;
  const std::size_t plen = std::strlen(kPrefix);
  for (const auto& [key, value] : file.metadata)
    if (key.size() > plen && key.compare(0, plen, kPrefix) == 0) names.push_back(key.substr(plen));
  return names;
}

}  // namespace sparsenm

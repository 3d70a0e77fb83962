// sparsenm — safetensors files (our own reader/writer on nlohmann-json) and condensed weights
// stored in them as ordinary tensors plus pattern metadata in "__metadata__".
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "sparsenm/dtype.hpp"
#include "sparsenm/format.hpp"

namespace sparsenm {

struct Tensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;  ///< little-endian, row-major, product(shape) * dtype_size bytes

  std::int64_t numel() const noexcept;
  MatrixView matrix() const;  ///< 2-D tensors of weight dtype only; InvalidArgument otherwise
};

struct SafetensorsFile {
  std::vector<Tensor> tensors;                      ///< in file order (sorted by offset)
  std::map<std::string, std::string> metadata;      ///< "__metadata__" (string -> string)

  const Tensor* find(const std::string& name) const noexcept;
  Tensor& add(Tensor t);  ///< InvalidArgument on a duplicate name
};

/// Parses a whole file image. FormatError on anything malformed: short buffer, header length
/// over 100 MB or past the end, bad JSON, unknown dtype, offsets out of range / overlapping /
/// not covering the data, shape*size != byte count.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes);
SafetensorsFile read_safetensors(const std::filesystem::path& path);  ///< + IoError
/// Serialises; writes `path.tmp-XXXX` then renames, so a failed write leaves no partial file.
std::vector<std::byte> serialize_safetensors(const SafetensorsFile& file);
void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file);

/// Stores `w` as tensors "<name>.values", "<name>.indices" (+ "<name>.columns" for venom) and
/// metadata key "sparsenm:<name>" = JSON {"pattern","rows","cols","format_version"}.
void store_condensed(SafetensorsFile& file, const std::string& name, const CondensedMatrix& w);
/// Inverse of store_condensed; validates (FormatError on inconsistent tensors or metadata).
CondensedMatrix load_condensed(const SafetensorsFile& file, const std::string& name);
/// Names of the condensed weights stored in a file.
std::vector<std::string> condensed_names(const SafetensorsFile& file);

}  // namespace sparsenm

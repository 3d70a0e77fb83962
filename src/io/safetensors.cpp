// safetensors reader/writer (our own, on nlohmann-json).
//
// File layout (https://github.com/huggingface/safetensors, "Format"):
//   u64 little-endian N | N bytes of UTF-8 JSON header | data bytes
// The header is an object {name: {"dtype", "shape", "data_offsets": [begin, end]}, ...} with an
// optional "__metadata__": {string: string}. Offsets are relative to the start of the data; the
// tensors must cover the data contiguously (no holes, no overlap, nothing left over).
//
// What we accept: the dtypes DType can hold (F32, F16, BF16, F64, I64, I32, U32, U16, U8). The
// other safetensors dtypes (BOOL, I8, I16, U64, F8_E4M3, F8_E5M2, ...) are valid safetensors but
// not representable here: they raise FormatError("unsupported dtype X in tensor Y"); a string that
// is no safetensors dtype raises FormatError("unknown dtype X in tensor Y"). Extra keys inside a
// tensor entry are ignored (as the reference implementation does); duplicate keys at any level
// are rejected.
//
// What we write: tensors in SafetensorsFile order, data packed back to back from offset 0;
// "__metadata__" first (omitted when empty); compact JSON padded with spaces so that the data
// starts at a multiple of 8 bytes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"

static_assert(std::endian::native == std::endian::little, "sparsenm io assumes a little-endian host");

namespace sparsenm {

namespace {

constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;  // 100 MB, as the reference

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypeNames[] = {
    {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64},
    {"I64", DType::i64}, {"I32", DType::i32}, {"U32", DType::u32},   {"U16", DType::u16},
    {"U8", DType::u8},
};
// Valid safetensors dtypes that DType cannot represent.
constexpr const char* kUnsupportedDTypes[] = {"BOOL",    "I8",       "I16",        "U64",
                                              "F8_E4M3", "F8_E5M2",  "F8_E8M0",    "F4",
                                              "F6_E2M3", "F6_E3M2",  "C64",        "F8_E4M3FNUZ",
                                              "F8_E5M2FNUZ"};

const char* safetensors_dtype_name(DType t) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == t) return d.name;
  throw InvalidArgument("dtype", "has no safetensors name");
}

std::string show(const std::string& s) {
  // Names come from untrusted files: keep messages printable and short.
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < 200; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (s.size() > 200) out += "...";
  return out + "'";
}

[[noreturn]] void fail(const std::string& what) { throw FormatError("safetensors: " + what); }

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

/// Non-negative integer JSON value (no floats, no negatives).
bool as_u64(const nlohmann::json& j, std::uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<std::uint64_t>();
    return true;
  }
  if (j.is_number_integer()) {
    std::int64_t v = j.get<std::int64_t>();
    if (v < 0) return false;
    out = std::uint64_t(v);
    return true;
  }
  return false;
}

/// One tensor entry of a parsed header.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;  // sorted by offset
  std::map<std::string, std::string> metadata;
};

/// Parses and validates a header against a data section of `data_size` bytes.
Header parse_header(const char* text, std::size_t size, std::uint64_t data_size) {
  // Duplicate keys are invisible once parsed (the last one wins), so watch them during parsing.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  nlohmann::json::parser_callback_t watch = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      open_objects.emplace_back();
    } else if (ev == E::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (ev == E::key && !open_objects.empty() && duplicate.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  nlohmann::json header = nlohmann::json::parse(text, text + size, watch, /*allow_exceptions=*/false);
  if (header.is_discarded()) fail("header is not valid JSON");
  if (!duplicate.empty()) fail("duplicate key " + show(duplicate) + " in header");
  if (!header.is_object()) fail("header must be a JSON object");

  Header out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail("__metadata__ must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          fail("__metadata__ value of " + show(m.key()) + " must be a string (got " + m.value().type_name() + ")");
        out.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    const std::string tn = "tensor " + show(name);
    if (!v.is_object()) fail(tn + ": entry must be an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    if (dt == v.end() || !dt->is_string()) fail(tn + ": missing or non-string \"dtype\"");
    if (sh == v.end() || !sh->is_array()) fail(tn + ": missing or non-array \"shape\"");
    if (off == v.end() || !off->is_array()) fail(tn + ": missing or non-array \"data_offsets\"");

    Entry e;
    e.name = name;
    const std::string& dts = dt->get_ref<const std::string&>();
    bool known = false;
    for (const auto& d : kDTypeNames)
      if (dts == d.name) {
        e.dtype = d.dtype;
        known = true;
      }
    if (!known) {
      for (const char* u : kUnsupportedDTypes)
        if (dts == u) fail("unsupported dtype " + show(dts) + " in " + tn);
      fail("unknown dtype " + show(dts) + " in " + tn);
    }

    std::uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : *sh) {
      std::uint64_t n;
      if (!as_u64(d, n)) fail(tn + ": shape entries must be non-negative integers (got " + d.dump() + ")");
      if (n > std::uint64_t(INT64_MAX)) fail(tn + ": shape entry " + std::to_string(n) + " is too large");
      e.shape.push_back(std::int64_t(n));
      if (__builtin_mul_overflow(numel, n, &numel)) overflow = true;
    }
    std::uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, std::uint64_t(dtype_size(e.dtype)), &nbytes) ||
        nbytes > std::uint64_t(INT64_MAX))
      fail(tn + ": shape product overflows");

    if (off->size() != 2) fail(tn + ": data_offsets must hold exactly 2 integers");
    if (!as_u64((*off)[0], e.begin) || !as_u64((*off)[1], e.end))
      fail(tn + ": data_offsets must be non-negative integers (got " + off->dump() + ")");
    if (e.begin > e.end)
      fail(tn + ": data_offsets begin " + std::to_string(e.begin) + " > end " + std::to_string(e.end));
    if (e.end > data_size)
      fail(tn + ": data_offsets end " + std::to_string(e.end) + " is past the data (" + std::to_string(data_size) +
           " bytes)");
    if (e.end - e.begin != nbytes)
      fail(tn + ": holds " + std::to_string(e.end - e.begin) + " bytes but shape x dtype needs " +
           std::to_string(nbytes));
    out.entries.push_back(std::move(e));
  }

  std::sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  std::uint64_t pos = 0;
  for (const auto& e : out.entries) {
    if (e.begin < pos) fail("tensor " + show(e.name) + " overlaps the previous tensor (begins at " +
                            std::to_string(e.begin) + ", previous ends at " + std::to_string(pos) + ")");
    if (e.begin > pos) fail("hole in the data before tensor " + show(e.name) + " (bytes " + std::to_string(pos) +
                            ".." + std::to_string(e.begin) + " belong to no tensor)");
    pos = e.end;
  }
  if (pos != data_size)
    fail("data has " + std::to_string(data_size - pos) + " trailing bytes that belong to no tensor");
  return out;
}

Tensor make_tensor(Entry&& e) {
  Tensor t;
  t.name = std::move(e.name);
  t.dtype = e.dtype;
  t.shape = std::move(e.shape);
  return t;
}

/// Checks what serialisation relies on; returns the header JSON text (padded).
std::string build_header(const SafetensorsFile& file) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : file.metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  std::set<std::string_view> seen;
  std::uint64_t offset = 0;
  for (const auto& t : file.tensors) {
    const std::string arg = "tensor '" + t.name + "'";
    if (t.name == "__metadata__") throw InvalidArgument(arg, "the name __metadata__ is reserved");
    if (!seen.insert(t.name).second) throw InvalidArgument(arg, "duplicate tensor name");
    std::uint64_t numel = 1;
    for (auto d : t.shape) {
      if (d < 0) throw InvalidArgument(arg, "shape entries must be >= 0 (got " + std::to_string(d) + ")");
      if (__builtin_mul_overflow(numel, std::uint64_t(d), &numel))
        throw InvalidArgument(arg, "shape product overflows");
    }
    std::uint64_t nbytes = 0;
    if (__builtin_mul_overflow(numel, std::uint64_t(dtype_size(t.dtype)), &nbytes) || nbytes != t.data.size())
      throw InvalidArgument(arg, "data must hold product(shape) * dtype size = " + std::to_string(nbytes) +
                                     " bytes (got " + std::to_string(t.data.size()) + ")");
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = safetensors_dtype_name(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + nbytes};
    h[t.name] = std::move(e);
    offset += nbytes;
  }
  // Names must be valid UTF-8 for JSON; dump throws type_error on invalid bytes.
  std::string text;
  try {
    text = h.dump();
  } catch (const nlohmann::json::exception& ex) {
    throw InvalidArgument("tensor or metadata name", std::string("must be valid UTF-8 (") + ex.what() + ")");
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  return text;
}

void put_le64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::byte((v >> (8 * i)) & 0xff);
}

std::string errno_text(int err) { return std::strerror(err); }

// ---- POSIX file helpers ---------------------------------------------------------------------

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void read_exact(int fd, void* dst, std::size_t n, const std::filesystem::path& path, std::uint64_t at) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, std::min<std::size_t>(n, std::size_t(1) << 30), off_t(at));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot read '" + path.string() + "': " + errno_text(errno));
    }
    if (got == 0) throw IoError("cannot read '" + path.string() + "': file shrank while reading");
    p += got;
    at += std::uint64_t(got);
    n -= std::size_t(got);
  }
}

bool write_all(int fd, const void* src, std::size_t n) {
  const auto* p = static_cast<const char*>(src);
  while (n > 0) {
    ssize_t put = ::write(fd, p, std::min<std::size_t>(n, std::size_t(1) << 30));
    if (put < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += put;
    n -= std::size_t(put);
  }
  return true;
}

std::string random_suffix() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  std::uint64_t r = (std::uint64_t(rd()) << 32) ^ rd() ^
                    std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull) ^ std::uint64_t(::getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

}  // namespace

// ---- Tensor / SafetensorsFile ---------------------------------------------------------------

std::int64_t Tensor::numel() const noexcept {
  std::uint64_t n = 1;
  for (auto d : shape) n *= std::uint64_t(d);  // unsigned: wraps instead of UB on nonsense
  return std::int64_t(n);
}

MatrixView Tensor::matrix() const {
  const std::string arg = "tensor '" + name + "'";
  if (shape.size() != 2)
    throw InvalidArgument(arg, "must be 2-D to be used as a matrix (got " + std::to_string(shape.size()) + "-D)");
  if (!is_weight_dtype(dtype))
    throw InvalidArgument(arg, "must be f32, f16 or bf16 to be used as a matrix (got " + std::string(to_string(dtype)) + ")");
  if (shape[0] < 0 || shape[1] < 0 || data.size() != std::size_t(numel()) * dtype_size(dtype))
    throw InvalidArgument(arg, "data size does not match its shape");
  return {dtype, data.data(), shape[0], shape[1], shape[1]};
}

const Tensor* SafetensorsFile::find(const std::string& name) const noexcept {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Tensor& SafetensorsFile::add(Tensor t) {
  if (find(t.name)) throw InvalidArgument("tensor '" + t.name + "'", "duplicate tensor name");
  tensors.push_back(std::move(t));
  return tensors.back();
}

// ---- reading ---------------------------------------------------------------------------------

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes) {
  if (bytes.size() < 8)
    fail("file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  const std::uint64_t n = read_le64(bytes.data());
  if (n > kMaxHeaderBytes) fail("header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > bytes.size() - 8)
    fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(bytes.size()) +
         " bytes)");
  const std::uint64_t data_size = bytes.size() - 8 - n;
  Header h = parse_header(reinterpret_cast<const char*>(bytes.data() + 8), std::size_t(n), data_size);
  const std::byte* data = bytes.data() + 8 + n;
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  out.tensors.reserve(h.entries.size());
  for (auto& e : h.entries) {
    auto b = e.begin, en = e.end;
    Tensor& t = out.tensors.emplace_back(make_tensor(std::move(e)));
    t.data.assign(data + b, data + en);
  }
  return out;
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw IoError("cannot open '" + path.string() + "': " + errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw IoError("cannot stat '" + path.string() + "': " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw IoError("cannot read '" + path.string() + "': not a regular file");
  const std::uint64_t size = std::uint64_t(st.st_size);
  const std::string where = " in '" + path.string() + "'";
  try {
    if (size < 8) fail("file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
    std::byte len[8];
    read_exact(f.fd, len, 8, path, 0);
    const std::uint64_t n = read_le64(len);
    if (n > kMaxHeaderBytes) fail("header length " + std::to_string(n) + " exceeds the 100 MB limit");
    if (n > size - 8)
      fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
           " bytes)");
    std::string text(std::size_t(n), '\0');
    read_exact(f.fd, text.data(), text.size(), path, 8);
    Header h = parse_header(text.data(), text.size(), size - 8 - n);
    SafetensorsFile out;
    out.metadata = std::move(h.metadata);
    out.tensors.reserve(h.entries.size());
    for (auto& e : h.entries) {
      auto b = e.begin, en = e.end;
      Tensor& t = out.tensors.emplace_back(make_tensor(std::move(e)));
      t.data.resize(std::size_t(en - b));
      read_exact(f.fd, t.data.data(), t.data.size(), path, 8 + n + b);
    }
    return out;
  } catch (const FormatError& ex) {
    throw FormatError(ex.what() + where);
  }
}

// ---- writing ---------------------------------------------------------------------------------

std::vector<std::byte> serialize_safetensors(const SafetensorsFile& file) {
  const std::string header = build_header(file);
  std::size_t total = 8 + header.size();
  for (const auto& t : file.tensors) total += t.data.size();
  std::vector<std::byte> out(total);
  put_le64(out.data(), header.size());
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::size_t pos = 8 + header.size();
  for (const auto& t : file.tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + pos, t.data.data(), t.data.size());
    pos += t.data.size();
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const SafetensorsFile& file) {
  const std::string header = build_header(file);  // InvalidArgument before touching the disk
  if (path.empty() || !path.has_filename()) throw InvalidArgument("path", "must name a file (got '" + path.string() + "')");

  const std::filesystem::path tmp = path.string() + ".tmp-" + random_suffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    throw IoError("cannot write '" + path.string() + "': cannot create temporary file '" + tmp.string() +
                  "': " + errno_text(errno));
  auto abandon = [&](const std::string& step, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw IoError("cannot write '" + path.string() + "': " + step + ": " + errno_text(err));
  };
  std::byte len[8];
  put_le64(len, header.size());
  if (!write_all(fd, len, 8) || !write_all(fd, header.data(), header.size())) abandon("write", errno);
  for (const auto& t : file.tensors)
    if (!write_all(fd, t.data.data(), t.data.size())) abandon("write", errno);
  if (::fsync(fd) != 0) abandon("fsync", errno);
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) abandon("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("rename", errno);
  // Make the rename durable; failure here does not undo a complete, renamed file.
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace sparsenm

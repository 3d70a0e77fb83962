// safetensors reader/writer: round trips, the byte-exact layout, every malformed input, and
// crash-safe writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"

namespace fs = std::filesystem;
using namespace sparsenm;

namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> b(n);
  for (auto& x : b) x = std::byte(rng() & 0xff);
  return b;
}

/// A file image: 8-byte length, header text (unpadded unless the caller pads), data.
std::vector<std::byte> image(const std::string& header, std::size_t data_bytes = 0, std::uint64_t len_override = 0,
                             bool override_len = false) {
  std::vector<std::byte> out(8);
  std::uint64_t n = override_len ? len_override : header.size();
  for (int i = 0; i < 8; ++i) out[i] = std::byte((n >> (8 * i)) & 0xff);
  auto h = bytes_of(header);
  out.insert(out.end(), h.begin(), h.end());
  auto d = random_bytes(data_bytes, 7);
  out.insert(out.end(), d.begin(), d.end());
  return out;
}

std::string format_error_of(const std::vector<std::byte>& img) {
  try {
    parse_safetensors(img);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("sparsenm-io-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

Tensor make(const std::string& name, DType t, std::vector<std::int64_t> shape, std::uint64_t seed) {
  Tensor x{name, t, std::move(shape), {}};
  x.data = random_bytes(std::size_t(x.numel()) * dtype_size(t), seed);
  return x;
}

void expect_same(const SafetensorsFile& a, const SafetensorsFile& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE(a.tensors[i].name);
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_TRUE(a.tensors[i].data == b.tensors[i].data);
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

const DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64,
                            DType::i32, DType::u32, DType::u16,  DType::u8};

}  // namespace

// ---- round trips -----------------------------------------------------------------------------

TEST(Safetensors, RoundTripEveryDTypeAndShape) {
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {0}, {5}, {3, 7}, {2, 0, 4}, {1, 2, 3, 5}};
  SafetensorsFile f;
  std::uint64_t seed = 1;
  for (DType t : kAllDTypes)
    for (const auto& s : shapes) {
      std::string name = std::string(to_string(t)) + "/" + std::to_string(s.size()) + "d" + std::to_string(seed);
      f.add(make(name, t, s, seed++));
    }
  f.metadata = {{"format", "pt"}, {"note", "ünïcödé \"quoted\" \\ and\nnewline"}, {"", "empty key"}};
  const auto img = serialize_safetensors(f);
  // Data starts 8-aligned; the header is space-padded.
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(img[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  const SafetensorsFile g = parse_safetensors(img);
  expect_same(f, g);
  EXPECT_EQ(serialize_safetensors(g), img);  // stable: re-serialising gives the same bytes
}

TEST(Safetensors, EmptyFileHasNoTensors) {
  SafetensorsFile f;
  const auto img = serialize_safetensors(f);
  EXPECT_EQ(img.size(), 16u);  // "{}" padded to 8
  const auto g = parse_safetensors(img);
  EXPECT_TRUE(g.tensors.empty());
  EXPECT_TRUE(g.metadata.empty());
}

TEST(Safetensors, ByteExactAgainstHandWrittenFile) {
  // Written by hand from the format description: length 136 = 132 bytes of JSON + 4 spaces.
  const std::string json =
      R"({"__metadata__":{"a":"b"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("y":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  ASSERT_EQ(json.size(), 132u);
  std::vector<std::byte> want = {std::byte{0x88}, {}, {}, {}, {}, {}, {}, {}};
  for (char c : json + "    ") want.push_back(std::byte(c));
  const float xs[2] = {1.5f, -2.0f};
  const std::uint8_t ys[3] = {1, 2, 255};
  for (int i = 0; i < 8; ++i) want.push_back(reinterpret_cast<const std::byte*>(xs)[i]);
  for (int i = 0; i < 3; ++i) want.push_back(std::byte(ys[i]));

  SafetensorsFile f;
  f.metadata["a"] = "b";
  Tensor x{"x", DType::f32, {2}, std::vector<std::byte>(8)};
  std::memcpy(x.data.data(), xs, 8);
  Tensor y{"y", DType::u8, {3}, std::vector<std::byte>(3)};
  std::memcpy(y.data.data(), ys, 3);
  f.add(x);
  f.add(y);
  EXPECT_EQ(serialize_safetensors(f), want);

  const auto g = parse_safetensors(want);
  ASSERT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.tensors[0].name, "x");
  float back[2];
  std::memcpy(back, g.tensors[0].data.data(), 8);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.0f);
  EXPECT_EQ(g.metadata.at("a"), "b");
}

TEST(Safetensors, ReadsForeignLayoutSortedByOffset) {
  // Another writer: keys in arbitrary order, whitespace, metadata last, extra keys in an entry,
  // a zero-sized tensor sharing an offset.
  const std::string json = R"( { "b" : {"shape":[2,2],"dtype":"BF16","data_offsets":[4,12], "extra": 1},
      "a": {"data_offsets":[0,4],"dtype":"I32","shape":[]},
      "z": {"dtype":"F64","shape":[0,3],"data_offsets":[4,4]},
      "__metadata__": {"k": "v"} }   )";
  const auto f = parse_safetensors(image(json, 12));
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].name, "a");
  EXPECT_EQ(f.tensors[1].name, "z");
  EXPECT_EQ(f.tensors[2].name, "b");
  EXPECT_EQ(f.tensors[0].shape, std::vector<std::int64_t>{});
  EXPECT_EQ(f.tensors[0].numel(), 1);
  EXPECT_EQ(f.tensors[1].numel(), 0);
  EXPECT_EQ(f.tensors[2].dtype, DType::bf16);
  EXPECT_EQ(f.metadata.at("k"), "v");
  EXPECT_NE(f.find("b"), nullptr);
  EXPECT_EQ(f.find("nope"), nullptr);
}

TEST(Safetensors, FileRoundTrip) {
  TempDir dir;
  SafetensorsFile f;
  f.add(make("w", DType::f16, {33, 17}, 3));
  f.add(make("b", DType::f32, {33}, 4));
  f.metadata["format"] = "pt";
  const fs::path p = dir.path / "model.safetensors";
  write_safetensors(p, f);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"model.safetensors"});
  expect_same(f, read_safetensors(p));
  // Overwrite an existing file.
  f.tensors[0] = make("w", DType::bf16, {4, 4}, 5);
  write_safetensors(p, f);
  expect_same(f, read_safetensors(p));
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"model.safetensors"});
}

TEST(Safetensors, TensorMatrixView) {
  Tensor w = make("w", DType::f16, {3, 5}, 1);
  auto v = w.matrix();
  EXPECT_EQ(v.rows, 3);
  EXPECT_EQ(v.cols, 5);
  EXPECT_EQ(v.ld, 5);
  EXPECT_EQ(v.dtype, DType::f16);
  EXPECT_EQ(v.data, w.data.data());
  EXPECT_THROW(make("v", DType::f16, {15}, 1).matrix(), InvalidArgument);
  EXPECT_THROW(make("i", DType::i32, {3, 5}, 1).matrix(), InvalidArgument);
  Tensor bad = w;
  bad.data.pop_back();
  EXPECT_THROW(bad.matrix(), InvalidArgument);
}

// ---- malformed input -------------------------------------------------------------------------

TEST(Safetensors, RejectsMalformedWithClearMessages) {
  struct Case {
    const char* what;
    std::vector<std::byte> img;
    const char* expect;
  };
  const std::string ok_entry = R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<Case> cases = {
      {"empty buffer", {}, "shorter than the 8-byte"},
      {"7 bytes", std::vector<std::byte>(7), "shorter than the 8-byte"},
      {"header > 100 MB", image("{}", 0, 100'000'001, true), "exceeds the 100 MB limit"},
      {"header length huge", image("{}", 0, ~0ull, true), "exceeds the 100 MB limit"},
      {"header past end", image("{}", 0, 3, true), "past the end"},
      {"invalid json", image("{\"x\":"), "not valid JSON"},
      {"trailing garbage", image("{} x"), "not valid JSON"},
      {"invalid utf-8", image("{\"\xff\":1}"), "not valid JSON"},
      {"empty header", image(""), "not valid JSON"},
      {"array header", image("[]"), "must be a JSON object"},
      {"number header", image("42"), "must be a JSON object"},
      {"entry not object", image(R"({"x":[1]})"), "tensor 'x': entry must be an object"},
      {"missing dtype", image(R"({"x":{"shape":[],"data_offsets":[0,0]}})"), "\"dtype\""},
      {"dtype not string", image(R"({"x":{"dtype":3,"shape":[],"data_offsets":[0,0]}})"), "\"dtype\""},
      {"shape not array", image(R"({"x":{"dtype":"U8","shape":2,"data_offsets":[0,2]}})"), "\"shape\""},
      {"offsets missing", image(R"({"x":{"dtype":"U8","shape":[2]}})", 2), "\"data_offsets\""},
      {"unknown dtype", image(R"({"x":{"dtype":"F13","shape":[],"data_offsets":[0,0]}})"),
       "unknown dtype 'F13' in tensor 'x'"},
      {"unsupported dtype", image(R"({"flag":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}})", 1),
       "unsupported dtype 'BOOL' in tensor 'flag'"},
      {"unsupported f8", image(R"({"q":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1),
       "unsupported dtype 'F8_E4M3' in tensor 'q'"},
      {"negative shape", image(R"({"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})"), "non-negative integers"},
      {"float shape", image(R"({"x":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", 2), "non-negative integers"},
      {"string shape", image(R"({"x":{"dtype":"U8","shape":["2"],"data_offsets":[0,2]}})", 2), "non-negative integers"},
      {"shape overflow", image(R"({"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
       "overflows"},
      {"shape x size overflow",
       image(R"({"x":{"dtype":"F64","shape":[2305843009213693952,1],"data_offsets":[0,0]}})"), "overflows"},
      {"shape entry > int64", image(R"({"x":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}})"),
       "too large"},
      {"offsets not integers", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":["0",2]}})", 2),
       "data_offsets must be non-negative integers"},
      {"offsets float", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2.5]}})", 2),
       "data_offsets must be non-negative integers"},
      {"offsets negative", image(R"({"x":{"dtype":"U8","shape":[0],"data_offsets":[-1,-1]}})"),
       "data_offsets must be non-negative integers"},
      {"three offsets", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,1,2]}})", 2), "exactly 2"},
      {"begin > end", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[2,0]}})", 2), "begin 2 > end 0"},
      {"past data", image(R"({"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 3), "past the data"},
      {"byte count", image(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12"},
      {"overlap", image("{" + ok_entry + R"(,"y":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", 8), "overlaps"},
      {"hole", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})", 6),
       "hole in the data before tensor 'y'"},
      {"hole at start", image(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", 3), "hole"},
      {"trailing data", image("{" + ok_entry + "}", 9), "1 trailing bytes"},
      {"data but no tensors", image("{}", 4), "4 trailing bytes"},
      {"duplicate tensor", image("{" + ok_entry + "," + ok_entry + "}", 8), "duplicate key 'x'"},
      {"duplicate metadata key", image(R"({"__metadata__":{"a":"1","a":"2"}})"), "duplicate key 'a'"},
      {"metadata value not string", image(R"({"__metadata__":{"a":1}})"), "value of 'a' must be a string"},
      {"metadata not object", image(R"({"__metadata__":["a"]})"), "__metadata__ must be an object"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = format_error_of(c.img);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.rfind("safetensors: ", 0), 0u) << msg;
  }
}

TEST(Safetensors, EveryTruncationIsRejected) {
  SafetensorsFile f;
  f.add(make("a", DType::f16, {3, 5}, 1));
  f.add(make("b", DType::u8, {4}, 2));
  f.metadata["m"] = "x";
  const auto img = serialize_safetensors(f);
  for (std::size_t n = 0; n < img.size(); ++n) {
    std::vector<std::byte> cut(img.begin(), img.begin() + std::ptrdiff_t(n));
    EXPECT_THROW(parse_safetensors(cut), FormatError) << "truncated to " << n << " bytes";
  }
  // One extra byte is a trailing, uncovered byte.
  auto longer = img;
  longer.push_back(std::byte{0});
  EXPECT_THROW(parse_safetensors(longer), FormatError);
}

TEST(Safetensors, RandomCorruptionNeverEscapesFormatError) {
  SafetensorsFile f;
  f.add(make("a", DType::f32, {4, 3}, 1));
  f.add(make("bb", DType::i64, {2}, 2));
  f.metadata["key"] = "value";
  const auto img = serialize_safetensors(f);
  std::mt19937_64 rng(42);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bad = img;
    int flips = 1 + int(rng() % 4);
    for (int i = 0; i < flips; ++i) bad[rng() % bad.size()] = std::byte(rng() & 0xff);
    try {
      auto g = parse_safetensors(bad);
      ++parsed;
      for (const auto& t : g.tensors) EXPECT_EQ(t.data.size(), std::size_t(t.numel()) * dtype_size(t.dtype));
    } catch (const FormatError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(parsed, 0);  // flips in the data section stay valid
}

// ---- file errors -----------------------------------------------------------------------------

TEST(Safetensors, ReadErrorsNameThePath) {
  TempDir dir;
  const fs::path missing = dir.path / "missing.safetensors";
  try {
    read_safetensors(missing);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_safetensors(dir.path), IoError);  // a directory
  const fs::path junk = dir.path / "junk.safetensors";
  std::ofstream(junk) << "not a safetensors file at all";
  try {
    read_safetensors(junk);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(junk.string()), std::string::npos) << e.what();
  }
}

TEST(Safetensors, FailedWriteIntoMissingDirectoryLeavesNothing) {
  TempDir dir;
  SafetensorsFile f;
  f.add(make("w", DType::f32, {2, 2}, 1));
  const fs::path p = dir.path / "no" / "such" / "dir" / "out.safetensors";
  try {
    write_safetensors(p, f);
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.listing().empty());
}

TEST(Safetensors, FailedWriteKeepsExistingFile) {
  // Writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ ignored); this works even as root, where
  // directory permissions do not stop a write.
  TempDir dir;
  const fs::path p = dir.path / "model.safetensors";
  SafetensorsFile small;
  small.add(make("w", DType::u8, {16}, 1));
  write_safetensors(p, small);
  const auto before = serialize_safetensors(small);

  SafetensorsFile big;
  big.add(make("w", DType::f32, {256, 256}, 2));  // 256 KiB
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  bool threw = false;
  std::string msg;
  try {
    write_safetensors(p, big);
  } catch (const IoError& e) {
    threw = true;
    msg = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(threw);
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"model.safetensors"});  // no temp file left
  std::ifstream in(p, std::ios::binary);
  std::vector<char> got((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(got.size(), before.size());
  EXPECT_EQ(std::memcmp(got.data(), before.data(), got.size()), 0);
}

TEST(Safetensors, WriteOntoDirectoryFailsAndKeepsIt) {
  TempDir dir;
  fs::create_directories(dir.path / "target" / "inside");
  SafetensorsFile f;
  f.add(make("w", DType::u8, {4}, 1));
  EXPECT_THROW(write_safetensors(dir.path / "target", f), IoError);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"target"});
  EXPECT_TRUE(fs::is_directory(dir.path / "target" / "inside"));
}

TEST(Safetensors, WriterRejectsInvalidTensorsBeforeTouchingDisk) {
  TempDir dir;
  const fs::path p = dir.path / "x.safetensors";
  SafetensorsFile dup;
  dup.tensors.push_back(make("a", DType::u8, {1}, 1));
  dup.tensors.push_back(make("a", DType::u8, {1}, 2));
  EXPECT_THROW(write_safetensors(p, dup), InvalidArgument);
  SafetensorsFile wrong_size;
  wrong_size.add(make("a", DType::f32, {3}, 1)).data.pop_back();
  EXPECT_THROW(write_safetensors(p, wrong_size), InvalidArgument);
  SafetensorsFile reserved;
  reserved.add(make("__metadata__", DType::u8, {1}, 1));
  EXPECT_THROW(serialize_safetensors(reserved), InvalidArgument);
  SafetensorsFile negative;
  negative.add(Tensor{"n", DType::u8, {-1}, {}});
  EXPECT_THROW(serialize_safetensors(negative), InvalidArgument);
  SafetensorsFile bad_utf8;
  bad_utf8.metadata["k"] = "\xff\xfe";
  EXPECT_THROW(serialize_safetensors(bad_utf8), InvalidArgument);
  EXPECT_TRUE(dir.listing().empty());
  SafetensorsFile f;
  f.add(make("a", DType::u8, {1}, 1));
  EXPECT_THROW(f.add(make("a", DType::u8, {1}, 1)), InvalidArgument);
}

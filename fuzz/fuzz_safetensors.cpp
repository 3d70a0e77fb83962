// libFuzzer target: arbitrary bytes -> parse_safetensors -> load_condensed for every condensed
// name. Any sparsenm::Error is an accepted outcome; anything else (a crash, a sanitizer report,
// another exception escaping, a round trip that changes the data) is a bug.
//
// Build and run: scripts/fuzz-smoke SECONDS (clang, -DSPARSENM_FUZZ=ON -DSPARSENM_CUDA=OFF).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_safetensors: invariant broken: %s\n", what);
    std::abort();
  }
}

bool same(const sparsenm::CondensedMatrix& a, const sparsenm::CondensedMatrix& b) {
  return a.layout == b.layout && a.dtype == b.dtype && a.values == b.values && a.indices == b.indices &&
         a.columns == b.columns;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sparsenm;
  SafetensorsFile f;
  try {
    f = parse_safetensors(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size));
  } catch (const Error&) {
    return 0;
  }
  // Everything parsed is consistent and serialises back to a file that parses to the same thing.
  for (const auto& t : f.tensors)
    require(t.data.size() == std::size_t(t.numel()) * dtype_size(t.dtype), "tensor size == numel * dtype size");
  const std::vector<std::byte> image = serialize_safetensors(f);  // must not throw for parsed input
  const SafetensorsFile g = parse_safetensors(image);
  require(g.tensors.size() == f.tensors.size() && g.metadata == f.metadata, "round trip keeps tensors and metadata");
  for (std::size_t i = 0; i < f.tensors.size(); ++i)
    require(g.tensors[i].name == f.tensors[i].name && g.tensors[i].dtype == f.tensors[i].dtype &&
                g.tensors[i].shape == f.tensors[i].shape && g.tensors[i].data == f.tensors[i].data,
            "round trip keeps every tensor");

  for (const auto& name : condensed_names(f)) {
    CondensedMatrix c;
    try {
      c = load_condensed(f, name);
    } catch (const Error&) {
      continue;
    }
    // A weight that loads is valid: storing it again and loading gives the same weight.
    SafetensorsFile h;
    store_condensed(h, name, c);
    require(same(load_condensed(h, name), c), "store_condensed/load_condensed round trip");
  }
  return 0;
}

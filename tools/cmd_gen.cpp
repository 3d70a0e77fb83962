// sparsenm gen-test-model OUT [--seed S]   (hidden; used by the CLI tests)
//
// Writes a small LLaMA-like safetensors file: 2-D f16/bf16/f32 weights whose sizes are not
// multiples of the usual windows (tails), 1-D norms, an integer tensor, and metadata.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstring>
#include <memory>

#include "cli.hpp"
#include "sparsenm/io.hpp"

namespace sparsenm::cli {

namespace {

struct GenOptions {
  std::string output;
  std::uint64_t seed = 1;
};

Tensor weight(const std::string& name, DType t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  DenseMatrix m = random_matrix(t, rows, cols, seed);
  return Tensor{name, t, {rows, cols}, m.bytes()};
}

Tensor vector1d(const std::string& name, DType t, std::int64_t n, std::uint64_t seed) {
  DenseMatrix m = random_matrix(t, 1, n, seed);
  return Tensor{name, t, {n}, m.bytes()};
}

int run_gen(const GenOptions& o) {
  SafetensorsFile f;
  std::uint64_t s = o.seed * 1000;
  f.add(weight("model.embed_tokens.weight", DType::f16, 50, 24, s++));
  f.add(weight("model.layers.0.self_attn.q_proj.weight", DType::f16, 24, 24, s++));
  f.add(weight("model.layers.0.self_attn.k_proj.weight", DType::f16, 24, 24, s++));
  f.add(weight("model.layers.0.mlp.up_proj.weight", DType::f16, 40, 24, s++));
  f.add(weight("model.layers.0.mlp.down_proj.weight", DType::f16, 24, 40, s++));
  f.add(vector1d("model.layers.0.input_layernorm.weight", DType::f16, 24, s++));
  f.add(weight("model.layers.0.extra.proj", DType::f32, 13, 37, s++));
  f.add(weight("model.layers.0.extra.gate", DType::bf16, 130, 19, s++));
  f.add(vector1d("model.layers.0.rotary.inv_freq", DType::f32, 12, s++));
  Tensor ids{"position_ids", DType::i64, {1, 16}, std::vector<std::byte>(16 * 8)};
  for (std::int64_t i = 0; i < 16; ++i) std::memcpy(ids.data.data() + i * 8, &i, 8);
  f.add(std::move(ids));
  f.add(vector1d("model.norm.weight", DType::bf16, 24, s++));
  f.add(weight("lm_head.weight", DType::bf16, 50, 24, s++));
  f.metadata["format"] = "pt";
  f.metadata["generator"] = "sparsenm gen-test-model";
  write_safetensors(o.output, f);
  fmt::print("wrote {} ({} tensors)\n", o.output, f.tensors.size());
  return 0;
}

}  // namespace

Command add_gen_test_model(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  CLI::App* sub = app.add_subcommand("gen-test-model", "");  // empty description: hidden from --help
  sub->group("");
  sub->add_option("output", o->output, "output .safetensors file")->required();
  sub->add_option("--seed", o->seed, "random seed");
  return {sub, [o] { return run_gen(*o); }};
}

}  // namespace sparsenm::cli

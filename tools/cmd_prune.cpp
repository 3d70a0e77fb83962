// sparsenm prune IN -o OUT --pattern P [--include RE] [--exclude RE]
//
// Prunes every selected tensor that is 2-D and of a weight dtype (f32, f16, bf16) to the pattern
// by magnitude and stores it condensed (docs/FORMAT.md: "<name>.values", "<name>.indices",
// "<name>.columns" for V:N:M, metadata "sparsenm:<name>"). Every other tensor, the tensors of
// condensed weights already in the input, and the input's metadata are copied unchanged.
// Selection: a tensor is selected when --include (ECMAScript regex, searched anywhere in the
// name) matches or is absent, and --exclude does not match.
// Summary columns: sparsity = fraction of zeros after pruning; dense/condensed = bytes of the
// dense tensor and of values + indices (+ columns); kept |w| = sum |w| kept / sum |w| before
// (L1); kept w^2 = sum w^2 kept / sum w^2 before (squared L2). Totals are over all pruned tensors.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include "cli.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/io.hpp"
#include "sparsenm/prune.hpp"

namespace sparsenm::cli {

namespace {

struct PruneOptions {
  std::string input, output, pattern, include, exclude;
};

std::regex compile_regex(const std::string& text, const std::string& option) {
  try {
    return std::regex(text, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError(option + ": invalid regular expression '" + text + "' (" + e.what() + ")");
  }
}

int run_prune(const PruneOptions& o) {
  const Pattern pattern = parse_pattern_option(o.pattern, "--pattern");
  std::optional<std::regex> include, exclude;
  if (!o.include.empty()) include = compile_regex(o.include, "--include");
  if (!o.exclude.empty()) exclude = compile_regex(o.exclude, "--exclude");

  SafetensorsFile in = read_safetensors(o.input);

  // Tensors that already belong to condensed weights are copied, never pruned again.
  std::set<std::string> condensed_parts;
  for (const auto& name : condensed_names(in))
    for (const char* suffix : {".values", ".indices", ".columns"}) condensed_parts.insert(name + suffix);

  std::vector<const Tensor*> selected;
  for (const auto& t : in.tensors) {
    if (t.shape.size() != 2 || !is_weight_dtype(t.dtype) || condensed_parts.count(t.name)) continue;
    if (t.shape[0] < 1 || t.shape[1] < 1) continue;
    if (include && !std::regex_search(t.name, *include)) continue;
    if (exclude && std::regex_search(t.name, *exclude)) continue;
    selected.push_back(&t);
  }
  if (selected.empty())
    fmt::print(stderr, "sparsenm: warning: no tensor selected for pruning (2-D f32/f16/bf16{}{}); copying\n",
               include ? ", matching --include" : "", exclude ? ", not matching --exclude" : "");

  SafetensorsFile out;
  out.metadata = in.metadata;
  Table table({"tensor", "shape", "dtype", "pattern", "sparsity", "dense", "condensed", "ratio", "kept |w|", "kept w^2"},
              {false, false, false, false, true, true, true, true, true, true});
  Progress progress("pruning", selected.size());
  std::size_t dense_total = 0, condensed_total = 0, copied_bytes = 0;
  // Totals of retained magnitude are exact: sum of kept / sum of all over every pruned tensor.
  double l1_all = 0, l2_all = 0, l1_kept = 0, l2_kept = 0;
  std::int64_t elements = 0, zeros = 0;
  std::set<const Tensor*> chosen(selected.begin(), selected.end());
  for (const auto& t : in.tensors) {
    if (!chosen.count(&t)) {
      out.add(t);
      copied_bytes += t.data.size();
      continue;
    }
    progress.step(t.name);
    PruneReport rep;
    CondensedMatrix c = prune(t.matrix(), pattern, &rep);
    const Footprint fp = footprint(c.layout, c.dtype);
    store_condensed(out, t.name, c);
    const std::int64_t n = t.numel();
    elements += n;
    zeros += n - rep.nonzeros_kept;
    double l1 = 0, l2 = 0;
    const MatrixView v = t.matrix();
    for (std::int64_t r = 0; r < v.rows; ++r)
      for (std::int64_t col = 0; col < v.cols; ++col) {
        const double x = v.at(r, col);
        l1 += std::abs(x);
        l2 += x * x;
      }
    l1_all += l1;
    l2_all += l2;
    l1_kept += rep.retained_l1 * l1;
    l2_kept += rep.retained_l2 * l2;
    dense_total += t.data.size();
    condensed_total += fp.total();
    table.add({t.name, shape_text(t.shape), std::string(to_string(t.dtype)), pattern.str(),
               fmt::format("{:.1f}%", 100.0 * rep.sparsity), human_bytes(double(t.data.size())),
               human_bytes(double(fp.total())), fmt::format("{:.3f}", double(fp.total()) / double(t.data.size())),
               fmt::format("{:.4f}", rep.retained_l1), fmt::format("{:.4f}", rep.retained_l2)});
  }
  progress.done();
  write_safetensors(o.output, out);

  if (!selected.empty()) {
    table.separator();
    table.add({fmt::format("total ({} tensors)", selected.size()), "", "", pattern.str(),
               fmt::format("{:.1f}%", 100.0 * double(zeros) / double(elements)), human_bytes(double(dense_total)),
               human_bytes(double(condensed_total)), fmt::format("{:.3f}", double(condensed_total) / double(dense_total)),
               fmt::format("{:.4f}", l1_all > 0 ? l1_kept / l1_all : 1.0), fmt::format("{:.4f}", l2_all > 0 ? l2_kept / l2_all : 1.0)});
    fmt::print("{}", table.str());
  }
  fmt::print("pruned {} of {} tensors to {}; {} copied unchanged ({}); wrote {}\n", selected.size(), in.tensors.size(),
             pattern.str(), in.tensors.size() - selected.size(), human_bytes(double(copied_bytes)), o.output);
  return 0;
}

}  // namespace

Command add_prune(CLI::App& app) {
  auto o = std::make_shared<PruneOptions>();
  CLI::App* sub = app.add_subcommand("prune", "Prune the 2-D weights of a safetensors file to an N:M pattern and store them condensed");
  sub->add_option("input", o->input, "input .safetensors file")->required();
  sub->add_option("-o,--output", o->output, "output .safetensors file")->required();
  sub->add_option("-p,--pattern", o->pattern, "pattern: 2:4, 2:8, 2:8/vw16, 2:8/bw4x4, 128:2:8, 2:4/hw, ...")->required();
  sub->add_option("--include", o->include, "prune only tensors whose name matches this regex (ECMAScript, search)");
  sub->add_option("--exclude", o->exclude, "never prune tensors whose name matches this regex");
  return {sub, [o] { return run_prune(*o); }};
}

}  // namespace sparsenm::cli

// sparsenm inspect FILE [--json]
//
// Lists the tensors (name, dtype, shape, bytes) and the condensed weights (pattern, shape,
// footprint, ratio to dense). Every condensed weight is loaded, so a malformed one is an error.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli.hpp"
#include "sparsenm/io.hpp"

namespace sparsenm::cli {

namespace {

struct InspectOptions {
  std::string file;
  bool json = false;
};

int run_inspect(const InspectOptions& o) {
  const SafetensorsFile f = read_safetensors(o.file);
  const std::vector<std::string> names = condensed_names(f);
  std::map<std::string, std::string> owner;  // tensor -> condensed weight it belongs to
  for (const auto& n : names)
    for (const char* suffix : {".values", ".indices", ".columns"}) owner[n + suffix] = n;

  struct Info {
    std::string name;
    CondensedMatrix c;
    Footprint fp;
  };
  std::vector<Info> condensed;
  for (const auto& n : names) {
    CondensedMatrix c = load_condensed(f, n);
    Footprint fp = footprint(c.layout, c.dtype);
    condensed.push_back({n, std::move(c), fp});
  }
  std::size_t total_bytes = 0;
  for (const auto& t : f.tensors) total_bytes += t.data.size();

  if (o.json) {
    nlohmann::ordered_json j;
    j["file"] = o.file;
    j["tensor_bytes"] = total_bytes;
    j["metadata"] = nlohmann::json::object();
    for (const auto& [k, v] : f.metadata) j["metadata"][k] = v;
    j["tensors"] = nlohmann::json::array();
    for (const auto& t : f.tensors) {
      nlohmann::ordered_json e;
      e["name"] = t.name;
      e["dtype"] = std::string(to_string(t.dtype));
      e["shape"] = t.shape;
      e["bytes"] = t.data.size();
      if (owner.count(t.name)) e["condensed"] = owner[t.name];
      j["tensors"].push_back(e);
    }
    j["condensed"] = nlohmann::json::array();
    for (const auto& i : condensed) {
      nlohmann::ordered_json e;
      e["name"] = i.name;
      e["pattern"] = i.c.pattern().str();
      e["granularity"] = std::string(to_string(i.c.pattern().kind));
      e["rows"] = i.c.rows();
      e["cols"] = i.c.cols();
      e["dtype"] = std::string(to_string(i.c.dtype));
      e["density"] = i.c.pattern().density();
      e["value_bytes"] = i.fp.value_bytes;
      e["index_bytes"] = i.fp.index_bytes;
      e["colloc_bytes"] = i.fp.colloc_bytes;
      e["total_bytes"] = i.fp.total();
      e["dense_bytes"] = i.fp.dense_bytes;
      e["ratio"] = i.fp.ratio();
      j["condensed"].push_back(e);
    }
    fmt::print("{}\n", j.dump(2));
    return 0;
  }

  fmt::print("{}: {} tensors, {}, {} metadata entries\n\n", o.file, f.tensors.size(), human_bytes(double(total_bytes)),
             f.metadata.size());
  Table tensors({"tensor", "dtype", "shape", "bytes", "part of"}, {false, false, false, true, false});
  for (const auto& t : f.tensors)
    tensors.add({t.name, std::string(to_string(t.dtype)), shape_text(t.shape), human_bytes(double(t.data.size())),
                 owner.count(t.name) ? owner.at(t.name) : ""});
  fmt::print("{}", tensors.str());
  if (!condensed.empty()) {
    fmt::print("\n{} condensed weights:\n", condensed.size());
    Table cw({"weight", "pattern", "shape", "dtype", "values", "indices", "columns", "total", "dense", "ratio"},
             {false, false, false, false, true, true, true, true, true, true});
    std::size_t tot = 0, dense = 0;
    for (const auto& i : condensed) {
      tot += i.fp.total();
      dense += i.fp.dense_bytes;
      cw.add({i.name, i.c.pattern().str(), fmt::format("{}x{}", i.c.rows(), i.c.cols()),
              std::string(to_string(i.c.dtype)), human_bytes(double(i.fp.value_bytes)),
              human_bytes(double(i.fp.index_bytes)), i.fp.colloc_bytes ? human_bytes(double(i.fp.colloc_bytes)) : "-",
              human_bytes(double(i.fp.total())), human_bytes(double(i.fp.dense_bytes)),
              fmt::format("{:.3f}", i.fp.ratio())});
    }
    cw.separator();
    cw.add({"total", "", "", "", "", "", "", human_bytes(double(tot)), human_bytes(double(dense)),
            fmt::format("{:.3f}", dense ? double(tot) / double(dense) : 0.0)});
    fmt::print("{}", cw.str());
  }
  std::size_t shown = 0;
  for (const auto& [k, v] : f.metadata) {
    if (k.rfind("sparsenm:", 0) == 0) continue;
    if (shown++ == 0) fmt::print("\nmetadata:\n");
    fmt::print("  {} = {}\n", k, v.size() > 120 ? v.substr(0, 117) + "..." : v);
  }
  return 0;
}

}  // namespace

Command add_inspect(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "List the tensors and condensed weights of a safetensors file");
  sub->add_option("file", o->file, "a .safetensors file")->required();
  sub->add_flag("--json", o->json, "print JSON instead of tables");
  return {sub, [o] { return run_inspect(*o); }};
}

}  // namespace sparsenm::cli

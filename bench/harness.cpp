// sparsenm bench — the harness (BENCH.md): selects suites, records the device facts once per run
// (name, clocks, in-run copy bandwidth, commit, date), writes one JSON Lines file per suite
// (<out>/<device>-<suite>-<date>.jsonl) and prints the comparison table: ours vs each peer of
// the same case, speedup, ideal speedup (byte ratio), and the fraction of the floor reached.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "bench.hpp"
#include "gpu_facts.hpp"

namespace sparsenm::bench {

#if !defined(SPARSENM_WITH_CUDA)
bool gpu_present() { return false; }
std::string gpu_name() { return "cpu"; }
std::string gpu_clocks() { return ""; }
double measure_copy_GBps() { return 0; }
#endif

namespace {

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string commit_hash() {
  if (const char* c = std::getenv("SPARSENM_COMMIT"); c && *c) return c;
  if (FILE* p = popen("git rev-parse --short HEAD 2>/dev/null", "r")) {
    char buf[64] = {0};
    const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
    pclose(p);
    std::string s = got ? buf : "";
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    if (!s.empty()) return s;
  }
  return "unknown";
}

std::string file_tag(const std::string& device) {
  std::string s;
  for (char c : device) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

nlohmann::json to_json(const Row& r) {
  nlohmann::json j;
  j["suite"] = r.suite;
  j["op"] = r.op;
  if (!r.format.empty()) j["format"] = r.format;
  if (!r.pattern.empty()) j["pattern"] = r.pattern;
  if (!r.dtype.empty()) j["dtype"] = r.dtype;
  j["m"] = r.m;
  j["n"] = r.n;
  j["k"] = r.k;
  j["impl"] = r.impl;
  j["ms_median"] = r.ms_median;
  j["ms_min"] = r.ms_min;
  j["reps"] = r.reps;
  if (r.rel_err >= 0) j["rel_err"] = r.rel_err;
  if (r.bytes > 0) j["bytes"] = r.bytes;
  if (r.flops > 0) j["flops"] = r.flops;
  j["device"] = r.device;
  if (r.copy_GBps > 0) j["copy_GBps"] = r.copy_GBps;
  j["commit"] = r.commit;
  j["date"] = r.date;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

using Key = std::tuple<std::string, std::string, std::string, std::string, std::int64_t, std::int64_t, std::int64_t>;
Key key_of(const Row& r) { return {r.op, r.format, r.pattern, r.dtype, r.m, r.n, r.k}; }

void print_table(const std::string& suite, const std::vector<Row>& rows, double copy_GBps) {
  std::map<Key, std::vector<const Row*>> groups;
  std::vector<Key> order;
  for (const Row& r : rows) {
    auto [it, fresh] = groups.try_emplace(key_of(r));
    if (fresh) order.push_back(it->first);
    it->second.push_back(&r);
  }
  std::printf("\n== %s: %zu rows (copy bandwidth %.0f GB/s; floor = bytes / copy bandwidth)\n", suite.c_str(),
              rows.size(), copy_GBps);
  std::printf("%-6s %-8s %-5s %5s %6s %6s | %-22s %9s %6s %6s | %-14s %9s %7s %6s %6s\n", "op", "pattern", "dtype",
              "m", "n", "k", "ours", "ms", "floor%", "err", "peer", "ms", "speedup", "ideal", "ratio");
  for (const Key& key : order) {
    const auto& g = groups[key];
    for (const Row* o : g) {
      if (o->impl.rfind("sparsenm:", 0) != 0) continue;
      const double floor_ms = copy_GBps > 0 ? o->bytes / (copy_GBps * 1e9) * 1e3 : 0;
      bool any = false;
      for (const Row* p : g) {
        if (p->impl.rfind("sparsenm:", 0) == 0) continue;
        any = true;
        const double speed = p->ms_median / o->ms_median;
        const double ideal = o->bytes > 0 ? p->bytes / o->bytes : 0;
        std::printf("%-6s %-8s %-5s %5lld %6lld %6lld | %-22s %9.4f %5.0f%% %6.0e | %-14s %9.4f %6.2fx %5.2fx %5.2f\n",
                    o->op.c_str(), o->pattern.c_str(), o->dtype.c_str(), (long long)o->m, (long long)o->n,
                    (long long)o->k, o->impl.c_str(), o->ms_median, floor_ms > 0 ? 100 * floor_ms / o->ms_median : 0,
                    o->rel_err, p->impl.c_str(), p->ms_median, speed, ideal, ideal > 0 ? speed / ideal : 0);
      }
      if (!any)
        std::printf("%-6s %-8s %-5s %5lld %6lld %6lld | %-22s %9.4f %5.0f%% %6.0e | (no peer)\n", o->op.c_str(),
                    o->pattern.c_str(), o->dtype.c_str(), (long long)o->m, (long long)o->n, (long long)o->k,
                    o->impl.c_str(), o->ms_median, floor_ms > 0 ? 100 * floor_ms / o->ms_median : 0, o->rel_err);
    }
    bool has_ours = false;
    for (const Row* r : g) has_ours = has_ours || r->impl.rfind("sparsenm:", 0) == 0;
    if (!has_ours)
      for (const Row* r : g)
        std::printf("%-6s %-8s %-5s %5lld %6lld %6lld | %-22s %9.4f %s\n", r->op.c_str(), r->pattern.c_str(),
                    r->dtype.c_str(), (long long)r->m, (long long)r->n, (long long)r->k, r->impl.c_str(), r->ms_median,
                    r->note.c_str());
  }
}

}  // namespace

int run(const Options& options) {
  std::vector<const Suite*> selected;
  for (const Suite& s : suites())
    if (options.suites.empty() || std::find(options.suites.begin(), options.suites.end(), s.name) != options.suites.end())
      selected.push_back(&s);
  for (const auto& name : options.suites) {
    bool found = false;
    for (const Suite& s : suites()) found = found || s.name == name;
    if (!found) {
      std::fprintf(stderr, "sparsenm bench: unknown suite '%s'; available:", name.c_str());
      for (const Suite& s : suites()) std::fprintf(stderr, " %s", s.name.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  const bool gpu = gpu_present();
  const std::string device = gpu ? gpu_name() : "cpu";
  const double copy = gpu ? measure_copy_GBps() : 0;
  const std::string commit = commit_hash(), date = today_utc();
  std::printf("sparsenm bench: device %s%s%s, commit %s, %s\n", device.c_str(), gpu ? ", " : "",
              gpu ? gpu_clocks().c_str() : "", commit.c_str(), date.c_str());
  if (gpu) std::printf("copy bandwidth (1 GiB D2D, read + write): %.0f GB/s\n", copy);
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  int status = 0;
  std::vector<std::string> skipped;
  for (const Suite* s : selected) {
    if (s->needs_gpu && !gpu) {
      skipped.push_back(s->name);
      continue;
    }
    const std::string path = options.out_dir + "/" + file_tag(device) + "-" + s->name + "-" + date + ".jsonl";
    std::ofstream out(path, std::ios::trunc);
    if (!out) {
      std::fprintf(stderr, "sparsenm bench: cannot write %s\n", path.c_str());
      return 1;
    }
    std::vector<Row> rows;
    Context ctx{options, device, copy, commit, date, {}};
    ctx.emit = [&](Row r) {
      if (r.suite.empty()) r.suite = s->name;
      r.device = device;
      r.copy_GBps = copy;
      r.commit = commit;
      r.date = date;
      out << to_json(r).dump() << "\n";
      out.flush();
      rows.push_back(std::move(r));
    };
    std::printf("\n-- suite %s: %s\n", s->name.c_str(), s->description.c_str());
    std::fflush(stdout);
    try {
      s->run(ctx);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sparsenm bench: suite %s failed: %s\n", s->name.c_str(), e.what());
      status = 1;
    }
    print_table(s->name, rows, copy);
    std::printf("wrote %zu rows to %s\n", rows.size(), path.c_str());
  }
  if (!skipped.empty()) {
    std::printf("GPU suites skipped (no CUDA device):");
    for (const auto& n : skipped) std::printf(" %s", n.c_str());
    std::printf("\n");
  }
  return status;
}

}  // namespace sparsenm::bench

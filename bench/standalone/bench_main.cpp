// sparsenm — standalone driver of the bench harness for device runs made before the CLI
// (tools/, `sparsenm bench`) is on the branch. Same options as `sparsenm bench`:
//   sparsenm_bench [--suite S[,S]] [--quick] [--out DIR] [--patterns P,..] [--dtypes D,..]
//                  [--m M,..] [--shapes NxK,..] [--warmup N] [--reps N] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "bench.hpp"

namespace {
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) v.push_back(item);
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  sparsenm::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: missing value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--suite") for (auto& s : split(next())) o.suites.push_back(s);
    else if (a == "--out") o.out_dir = next();
    else if (a == "--patterns") o.patterns = split(next());
    else if (a == "--dtypes") o.dtypes = split(next());
    else if (a == "--m") for (auto& s : split(next())) o.ms.push_back(std::atoll(s.c_str()));
    else if (a == "--shapes")
      for (auto& s : split(next())) {
        long long n = 0, k = 0;
        if (std::sscanf(s.c_str(), "%lldx%lld", &n, &k) != 2) return 2;
        o.shapes.emplace_back(n, k);
      }
    else if (a == "--warmup") o.warmup = std::atoi(next().c_str());
    else if (a == "--reps") o.reps = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  return sparsenm::bench::run(o);
}

// sparsenm CLI — shared pieces: subcommand registration, usage errors, tables, progress.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sparsenm/pattern.hpp"

namespace CLI {
class App;
}

namespace sparsenm::cli {

/// A bad command line (exit code 2). Library InvalidArgument raised while interpreting an
/// option value is turned into this by the option helpers below.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A registered subcommand: the CLI11 node and what to run when it was selected.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_prune(CLI::App& app);
Command add_inspect(CLI::App& app);
Command add_demo(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_gen_test_model(CLI::App& app);  // hidden: a small model for tests

// ---- option helpers (throw UsageError naming the option) -------------------------------------

Pattern parse_pattern_option(const std::string& text, const std::string& option);
/// "4096x11008" -> (4096, 11008); both >= 1.
std::pair<std::int64_t, std::int64_t> parse_shape_option(const std::string& text, const std::string& option);

// ---- output ------------------------------------------------------------------------------------

/// "1.50 MiB", "512 B".
std::string human_bytes(double bytes);
/// "[4096, 11008]".
std::string shape_text(const std::vector<std::int64_t>& shape);

/// A plain text table: first row is the header; columns listed in `right` are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right = {});
  void add(std::vector<std::string> row);
  void separator();  ///< a rule before the next row (e.g. before totals)
  std::string str() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // empty row = separator
  std::vector<bool> right_;
};

/// Progress on stderr: a redrawn bar when stderr is a terminal, else one line per step.
class Progress {
 public:
  Progress(std::string verb, std::size_t total);
  void step(const std::string& item);  ///< called before working on item i (1-based count)
  void done();

 private:
  std::string verb_;
  std::size_t total_, count_ = 0;
  bool tty_;
};

}  // namespace sparsenm::cli

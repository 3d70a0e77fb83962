// sparsenm — command-line tool: prune, inspect, demo, bench.
//
// Exit codes: 0 success; 1 the work failed (I/O, malformed file, failed check, library error);
// 2 bad command line (unknown option, bad option value such as an invalid --pattern).
// Every error is printed once, on stderr, as "sparsenm: error: <what>".
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <exception>

#include "cli.hpp"
#include "sparsenm/error.hpp"
#include "sparsenm/version.hpp"

namespace {

int report(const char* what, int code) {
  fmt::print(stderr, "sparsenm: error: {}\n", what);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sparsenm::cli;
  CLI::App app{"sparsenm: N:M structured sparsity for NVIDIA GPUs (prune, store, multiply)", "sparsenm"};
  app.set_version_flag("--version", std::string("sparsenm ") + SPARSENM_VERSION_STRING);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<Command> commands = {add_prune(app), add_inspect(app), add_demo(app), add_bench(app),
                                   add_gen_test_model(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "sparsenm: error: {}\nRun 'sparsenm --help' (or 'sparsenm <command> --help') for usage.\n",
               e.what());
    return 2;
  }

  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return report("no command given", 2);
  } catch (const UsageError& e) {
    return report(e.what(), 2);
  } catch (const sparsenm::Error& e) {
    return report(e.what(), 1);
  } catch (const std::bad_alloc&) {
    return report("out of memory", 1);
  } catch (const std::exception& e) {
    return report(e.what(), 1);
  }
}

// Finding one's way: bare `carton`, `help`, `version`, unknown commands with
// a suggestion, and every --help ending with examples, environment
// variables and exit codes.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "testing.h"

using carton::testing::Run;

namespace {

std::string Bin() { return carton::testing::CartonBin(); }

// Every command and subcommand, as typed after "carton".
const std::vector<std::string> kCommands = {"pack",
                                            "init",
                                            "verify",
                                            "info",
                                            "hash",
                                            "ls",
                                            "cat",
                                            "diff",
                                            "unpack",
                                            "push",
                                            "pull",
                                            "shrink",
                                            "fetch",
                                            "tensors",
                                            "tensors import",
                                            "tensors export",
                                            "safetensors",
                                            "safetensors inspect",
                                            "safetensors verify",
                                            "safetensors get",
                                            "load",
                                            "cache",
                                            "cache list",
                                            "cache verify",
                                            "cache rm",
                                            "cache gc",
                                            "self-test",
                                            "infer",
                                            "runners",
                                            "devices",
                                            "version",
                                            "help"};

}  // namespace

TEST_CASE("cli: bare carton prints the command list on stdout and exits 0", "[cli][help]") {
  auto r = Run(Bin());
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* c : {"pack", "verify", "ls", "cat", "diff", "cache", "help", "version"}) {
    CHECK_THAT(r.out, Catch::Contains(std::string("  ") + c + " "));
  }
  CHECK_THAT(r.out, Catch::Contains("carton help COMMAND"));
  // A group without its subcommand: the group's help.
  auto g = Run(Bin() + " cache");
  CHECK(g.exit_code == 0);
  CHECK_THAT(g.out, Catch::Contains("Usage: carton cache"));
  CHECK_THAT(g.out, Catch::Contains("gc"));
}

TEST_CASE("cli: an unknown command is named, with the nearest one", "[cli][help]") {
  auto r = Run(Bin() + " packk x");
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("carton: unknown command 'packk' (did you mean 'pack'?)"));
  r = Run(Bin() + " cache lst");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::StartsWith("carton cache: unknown command 'lst' (did you mean 'list'?)"));
  r = Run(Bin() + " safetensors inspec f");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown command 'inspec' (did you mean 'inspect'?)"));
  r = Run(Bin() + " tensors exprt a b");
  CHECK_THAT(r.err, Catch::Contains("(did you mean 'export'?)"));
  // Nothing close: no guess.
  r = Run(Bin() + " frobnicate");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("carton: unknown command 'frobnicate'\n"));
  r = Run(Bin() + " help packk");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("did you mean 'pack'?"));
}

TEST_CASE("cli: help COMMAND is the command's --help", "[cli][help]") {
  auto help = Run(Bin() + " help verify");
  auto flag = Run(Bin() + " verify --help");
  CHECK(help.exit_code == 0);
  CHECK(help.out == flag.out);
  CHECK_THAT(help.out, Catch::Contains("Usage: carton verify"));
  auto sub = Run(Bin() + " help cache gc");
  CHECK(sub.exit_code == 0);
  CHECK_THAT(sub.out, Catch::Contains("--max-size"));
  CHECK(sub.out == Run(Bin() + " cache gc --help").out);
  CHECK(Run(Bin() + " help").out == Run(Bin() + " --help").out);
  // A word past a command that has no subcommands is refused, not ignored.
  auto extra = Run(Bin() + " help cache gc extra");
  CHECK(extra.exit_code == 2);
  CHECK(extra.out.empty());
  CHECK(extra.err == "carton help: 'cache gc' has no command 'extra'\n");
  auto leaf = Run(Bin() + " help verify now");
  CHECK(leaf.exit_code == 2);
  CHECK(leaf.err == "carton help: 'verify' has no command 'now'\n");
}

TEST_CASE("cli: version and --version print the project's version", "[cli][help]") {
  auto v = Run(Bin() + " version");
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::Matches("carton [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  CHECK(Run(Bin() + " --version").out == v.out);
}

TEST_CASE("cli: every --help has examples, the environment it reads and the exit codes",
          "[cli][help]") {
  for (const auto& c : kCommands) {
    INFO(c);
    auto r = Run(Bin() + " " + c + " --help");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("Examples:\n  carton "));
    CHECK_THAT(r.out, Catch::Contains("Environment:\n"));
    CHECK_THAT(r.out, Catch::Contains("Exit status:\n  0  success\n"));
    CHECK_THAT(r.out, Catch::Contains("  2  usage error"));
  }
  // Only what a command reads.
  auto pack = Run(Bin() + " pack --help");
  CHECK_THAT(pack.out, Catch::Contains("Environment:\n  (none read)"));
  auto verify = Run(Bin() + " verify --help");
  for (const char* v : {"CARTON_CACHE_DIR", "CARTON_ALLOWED_HOSTS", "CARTON_HTTP_HEADERS",
                        "CARTON_REGISTRY_AUTH"}) {
    CHECK_THAT(verify.out, Catch::Contains(v));
  }
  CHECK_THAT(verify.out, !Catch::Contains("CARTON_RUNNER_PATH"));
  auto infer = Run(Bin() + " infer --help");
  CHECK_THAT(infer.out, Catch::Contains("CARTON_RUNNER_PATH"));
  CHECK_THAT(infer.out, Catch::Contains("CARTON_REGISTRY_AUTH"));  // oci:// MODELs
  CHECK_THAT(Run(Bin() + " tensors import --help").out, !Catch::Contains("CARTON_REGISTRY_AUTH"));
  auto gc = Run(Bin() + " cache gc --help");
  CHECK_THAT(gc.out, Catch::Contains("CARTON_CACHE_DIR"));
  CHECK_THAT(gc.out, !Catch::Contains("CARTON_ALLOWED_HOSTS"));
  // A carton by URL that is downloaded whole may go to TMPDIR.
  CHECK_THAT(Run(Bin() + " info --help").out, Catch::Contains("TMPDIR"));
  CHECK_THAT(Run(Bin() + " shrink --help").out, Catch::Contains("CARTON_CACHE_DIR"));
  // Where errors go with --json: said by the commands that have it.
  CHECK_THAT(verify.out, Catch::Contains("With --json, errors are also printed"));
  CHECK_THAT(Run(Bin() + " cat --help").out, !Catch::Contains("--json"));
}

TEST_CASE("cli: a usage error exits 2 and names the command", "[cli][help]") {
  auto r = Run(Bin() + " verify --no-such-flag x.carton");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("carton verify: "));
  CHECK_THAT(r.err, Catch::Contains("--no-such-flag"));
  CHECK_THAT(r.err, Catch::Contains("Run 'carton verify --help'"));
  r = Run(Bin() + " diff only-one.carton");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("carton diff: "));
}

TEST_CASE("cli: a misspelt flag gets the nearest one, and cache ls is cache list", "[cli][help]") {
  auto r = Run(Bin() + " pack model --runer torchscript -o m.carton");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--runer: did you mean '--runner'?"));
  auto far = Run(Bin() + " pack model --zzzzzzzz -o m.carton");
  CHECK(far.exit_code == 2);
  CHECK(far.err.find("did you mean") == std::string::npos);
  carton::testing::TempDir tmp;
  auto ls = Run("CARTON_CACHE_DIR='" + tmp.file("cache") + "' " + Bin() + " cache ls --json");
  CHECK(ls.exit_code == 0);
  CHECK_THAT(ls.out, Catch::Contains("\"entries\""));
}

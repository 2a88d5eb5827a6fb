// Inputs that once broke a fuzz target (fuzz/fuzz_targets.h), fed to the
// same entry point. The bytes are embedded here so the regression runs in
// every build, with or without the fuzzers; with the sanitizer build
// (scripts/test.sh --sanitize) they are checked for memory errors too.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fuzz_targets.h"

using carton::fuzz::Input;

namespace {

struct Regression {
  const char* target;  // a name from AllTargets()
  const char* what;    // what went wrong, and the fix
  std::string bytes;
};

std::vector<Regression> Regressions() {
  using namespace std::string_literals;
  return {};
}

}  // namespace

TEST_CASE("fuzz regressions: every kept input runs cleanly through its target", "[hostile][fuzz]") {
  for (const Regression& r : Regressions()) {
    INFO(r.target << ": " << r.what);
    bool found = false;
    for (const auto& t : carton::fuzz::AllTargets()) {
      if (t.name != r.target) continue;
      found = true;
      t.run(Input(reinterpret_cast<const std::uint8_t*>(r.bytes.data()), r.bytes.size()));
    }
    CHECK(found);
  }
}

TEST_CASE("fuzz regressions: every target takes empty and tiny inputs", "[hostile][fuzz]") {
  const std::vector<std::string> inputs = {"",  std::string(1, '\0'), "\xff", "{",
                                           "[", "PK\x05\x06"};
  for (const auto& t : carton::fuzz::AllTargets()) {
    for (const auto& in : inputs) {
      INFO(t.name);
      t.run(Input(reinterpret_cast<const std::uint8_t*>(in.data()), in.size()));
    }
  }
}

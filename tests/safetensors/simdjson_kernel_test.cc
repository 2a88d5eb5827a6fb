// The header parsers choose simdjson's kernel from the CPU features the C
// library found at startup instead of simdjson's own probe
// (safetensors/src/simdjson_kernel.h): the choice must be the kernel that
// simdjson's probe picks.
#include <simdjson.h>

#include <catch2/catch.hpp>
#include <string>

#include "carton/safetensors/file.h"
#include "testing.h"

using namespace carton;
using namespace carton::safetensors;
using carton::testing::RawSafetensors;

TEST_CASE("safetensors: parses headers with the simdjson kernel its own probe picks",
          "[safetensors][reader]") {
  auto bytes = RawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  for (bool skip_fast_path : {false, true}) {
    ReaderOptions options;
    options.skip_fast_path = skip_fast_path;
    auto f = File::FromBuffer(bytes, options);
    REQUIRE(f.ok());
    CHECK(f->size() == 1);
  }
  const simdjson::implementation* probed =
      simdjson::get_available_implementations().detect_best_supported();
  REQUIRE(probed != nullptr);
  const std::string active = simdjson::get_active_implementation()->name();
  INFO("probe: " << probed->name() << ", active: " << active);
  CHECK(active == probed->name());
}

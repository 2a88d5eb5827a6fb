#include <catch2/catch.hpp>
#include <string>

#include "carton/gpu/gpu.h"

// gpu_no_driver_tests runs with CARTON_LIBCUDA naming a library that does
// not exist.

namespace carton::gpu {
namespace {

TEST_CASE("gpu: without a driver library, listing GPUs says why", "[gpu]") {
  std::string why;
  CHECK_FALSE(DriverAvailable(&why));
  CHECK(why.rfind("no CUDA driver: cannot open /nonexistent/libcuda.so.1 (", 0) == 0);
  auto gpus = ListGpus();
  REQUIRE_FALSE(gpus.ok());
  CHECK(gpus.status().code() == StatusCode::kUnsupported);
  auto device = OpenDevice(0);
  REQUIRE_FALSE(device.ok());
  CHECK(device.status().message() == why);
}

}  // namespace
}  // namespace carton::gpu

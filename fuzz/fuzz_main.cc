// A libFuzzer binary for one target of fuzz_targets.h, chosen at build time
// by CARTON_FUZZ_TARGET (see fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  carton::fuzz::CARTON_FUZZ_TARGET(carton::fuzz::Input(data, size));
  return 0;
}

#include "simdjson_kernel.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdlib>

#if defined(__x86_64__) && defined(__GLIBC__)
#if defined(__clang__)
// glibc's header spells a return type `_Bool`, a C keyword g++ also takes
// in C++ and clang++ does not (the fuzz build is clang's).
#define _Bool bool
#include <sys/platform/x86.h>
#undef _Bool
#else
#include <sys/platform/x86.h>
#endif
#endif

namespace carton::safetensors::internal {
namespace {

// The name of simdjson's best kernel for this CPU, with the instruction
// sets each one requires (simdjson 3.0's implementation list), or nullptr
// to let simdjson decide. glibc's "active" features also require the
// kernel to enable the AVX and AVX-512 register state, which simdjson's own
// probe does not check.
const char* BestKernel() {
#if defined(__x86_64__) && defined(__GLIBC__)
  const bool haswell = CPU_FEATURE_ACTIVE(AVX2) && CPU_FEATURE_ACTIVE(BMI1) &&
                       CPU_FEATURE_ACTIVE(BMI2) && CPU_FEATURE_ACTIVE(PCLMULQDQ);
  if (haswell && CPU_FEATURE_ACTIVE(AVX512F) && CPU_FEATURE_ACTIVE(AVX512DQ) &&
      CPU_FEATURE_ACTIVE(AVX512CD) && CPU_FEATURE_ACTIVE(AVX512BW) &&
      CPU_FEATURE_ACTIVE(AVX512VL) && CPU_FEATURE_ACTIVE(AVX512_VBMI2)) {
    return "icelake";
  }
  if (haswell) return "haswell";
  if (CPU_FEATURE_ACTIVE(SSE4_2) && CPU_FEATURE_ACTIVE(PCLMULQDQ)) return "westmere";
#endif
  return nullptr;
}

bool Choose() {
  if (std::getenv("SIMDJSON_FORCE_IMPLEMENTATION") != nullptr) return false;
  const char* name = BestKernel();
  if (name == nullptr) return false;
  const auto& kernels = simdjson::get_available_implementations();
  // Until its first use, simdjson's active implementation is a detector
  // that is not in the list; a kernel from the list was chosen already (by
  // simdjson's probe, or by the program) and stays.
  const simdjson::implementation* active = simdjson::get_active_implementation();
  if (std::find(kernels.begin(), kernels.end(), active) != kernels.end()) return false;
  const simdjson::implementation* kernel = kernels[name];
  if (kernel == nullptr) return false;
  simdjson::get_active_implementation() = kernel;
  return true;
}

}  // namespace

void ChooseSimdjsonKernel() {
  static const bool chosen = Choose();
  (void)chosen;
}

}  // namespace carton::safetensors::internal

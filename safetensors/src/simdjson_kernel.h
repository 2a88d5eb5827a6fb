// Private: chooses simdjson's kernel without its CPUID probe.
//
// simdjson picks its kernel (icelake, haswell, westmere, fallback) the first
// time a parser is used, with its own CPUID probe. In a virtual machine every
// CPUID instruction traps to the hypervisor (about 7 us each on the machine
// of docs/BENCHMARKS.md), so that probe took about 25 us, an eighth of the
// first File::Open in a process. The C library has already probed the CPU when the
// process started (glibc's dynamic loader does it for every program, to pick
// its own string functions) and publishes the answers
// (<sys/platform/x86.h>); this picks the same kernel from them.
#pragma once

namespace carton::safetensors::internal {

// Sets simdjson's active implementation from the CPU features known at
// startup, once per process; does nothing when SIMDJSON_FORCE_IMPLEMENTATION
// is set (simdjson then honours it), when a kernel was chosen already (by
// simdjson's first use, or by the program), or on other architectures.
// Thread-safe. Call before the first use of a simdjson parser.
void ChooseSimdjsonKernel();

}  // namespace carton::safetensors::internal

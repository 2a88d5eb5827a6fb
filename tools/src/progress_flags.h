// -q/--quiet and the progress line of the CLI's long commands: one
// ProgressLine per command (common/progress.h), drawn only when stderr is a
// terminal, and callbacks that silence a library's own download line.
#pragma once

#include <cstdint>

#include "carton/common/progress.h"

namespace carton::cli {

// A callback that reports nothing: given to a library's options, it stops
// the library's default download line (-q).
inline ProgressFn Silent() {
  return [](std::uint64_t, std::uint64_t) {};
}

}  // namespace carton::cli

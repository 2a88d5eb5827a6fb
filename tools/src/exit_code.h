// Maps library errors to the CLI's exit codes and prints them, in one place.
//   0 success; 1 the input is bad (corrupt, unsupported, verification
//   failed); 2 trouble (usage, I/O, network, internal).
#pragma once

#include <string_view>

#include "carton/common/status.h"

namespace carton::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitTrouble = 2;

int ExitCodeFor(const Status& status);

// Prints "carton <command>: <message>" to stderr and returns ExitCodeFor().
int Fail(std::string_view command, const Status& status);

}  // namespace carton::cli

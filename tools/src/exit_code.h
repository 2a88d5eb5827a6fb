// Maps library errors to the CLI's exit codes and prints them, in one place.
//   0 success; 1 the input is bad (corrupt, unsupported, verification
//   failed); 2 trouble (usage, I/O, network, internal); 3 the model's own
//   code failed (it raised while it ran).
#pragma once

#include <string_view>

#include "carton/common/status.h"

namespace carton::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitTrouble = 2;
inline constexpr int kExitModelFailed = 3;

int ExitCodeFor(const Status& status);

// Set once by main() when the command was given --json: Fail() then also
// prints the error document (json_out.h) on stdout.
void SetJsonErrors(bool json);
bool JsonErrors();

// Prints "carton <command>: <message>" to stderr (and, with --json, the
// error document to stdout) and returns ExitCodeFor().
int Fail(std::string_view command, const Status& status);

// As Fail, with the exit code given: for a status that is a verdict on the
// user's input whatever its code.
int FailWith(std::string_view command, const Status& status, int exit_code);

// As Fail, but a message of several lines (pack lists every problem it
// found) gives one "carton <command>: " line each.
int FailEachLine(std::string_view command, const Status& status);

// Only the stderr line; for commands that go on with their other inputs and
// report each one's error in their own document.
int ReportError(std::string_view command, const Status& status);

}  // namespace carton::cli

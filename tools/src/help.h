// Private to tools/src: the help text that is not CLI11's (help.cc), kept
// out of main.cc so the table of commands reads as data.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace carton::cli {

// What `carton <path> --help` ends with: examples, the environment
// variables the command reads, and its exit codes (and, for a command with
// --json when `json`, where its errors go then). Empty for an unknown path
// ("cache gc" is a path).
std::string HelpFooter(std::string_view path, bool json);

// Levenshtein distance: insertions, deletions and substitutions.
std::size_t EditDistance(const std::string& a, const std::string& b);

}  // namespace carton::cli

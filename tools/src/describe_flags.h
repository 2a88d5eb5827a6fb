// Private to the CLI: the flags that describe a model (--runner,
// --framework-version, --input, ...) turned into a CartonConfig, for
// `carton pack` and `carton init`.
#pragma once

#include <string>

#include "carton/common/status.h"
#include "carton/format/config.h"
#include "commands.h"

namespace carton::cli {

// Whether any describing flag was given.
bool AnyDescribeFlag(const DescribeArgs& a);

// The flags' names that were given, e.g. "--runner, --name".
std::string GivenDescribeFlags(const DescribeArgs& a);

// Puts the given flags over `config` (a list flag replaces the whole list).
// Errors: kInvalidArgument naming the flag and value (a bad --input, a
// dtype that is not one of the valid ones, which it lists, a version
// requirement that does not parse, with a hint for "==1.2").
Status ApplyDescribeFlags(const DescribeArgs& a, CartonConfig* config);

// A config from the flags alone: --runner and --framework-version are
// required; runner_compat_version defaults to 1.
Result<CartonConfig> ConfigFromFlags(const DescribeArgs& a);

}  // namespace carton::cli

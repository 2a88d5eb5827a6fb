// Private to tools/src: the one Environment of a command, from its flags,
// and the source of each carton it reads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "carton/carton/environment.h"
#include "carton/carton/source.h"
#include "carton/common/progress.h"
#include "commands.h"

namespace carton::cli {

// loader::DefaultEnvironment() with the command's flags on top; `quiet`
// draws no download progress line. Errors: those of DefaultEnvironment.
Result<Environment> CommandEnvironment(const EnvironmentArgs& args, bool quiet = false);

// The source of `model` (any location) for `operation` ("verify", "ls"),
// which names it in refusals. Errors: a location that does not parse.
Result<std::unique_ptr<CartonSource>> CommandSource(const std::string& model,
                                                    const Environment& env,
                                                    std::string_view operation,
                                                    const ProgressFn& progress = {});

}  // namespace carton::cli

// Private to the CLI: what `carton pack` adds around carton::Pack().
#pragma once

#include <string_view>

#include "carton/carton/pack.h"
#include "carton/common/status.h"
#include "commands.h"

namespace carton::cli {

// Sets the description's config from the describing flags and
// carton.toml: without carton.toml the flags describe the model; with it
// they are refused unless --override puts them over its values (the file's
// values with the flags on top, replacing the file). Also sets the
// exclusions, and reads the --self-test values without '='
// (IN.safetensors[:OUT.safetensors]) into the description's self-tests,
// which are added whether or not PATH has carton.toml.
// Errors: kInvalidArgument (flags with carton.toml and no --override, a
// bad flag), kCorrupt (an invalid carton.toml under --override); those of
// ReadSafetensorsTensors for a --self-test file.
Status DescribeForPack(const PackArgs& a, PackDescription* d);

// Warnings (unknown carton.toml keys) and the note on files left out by
// default, on stderr.
void PrintPackNotes(const PackReport& report);

}  // namespace carton::cli

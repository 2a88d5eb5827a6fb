// Private to tools/src: registry options from the command line, shared by
// the commands that take oci:// references.
#pragma once

#include "carton/loader/cartons.h"
#include "carton/oci/artifact.h"
#include "commands.h"

namespace carton::cli {

// The oci::OciOptions for `args`; registry access (the allowlist, per-host
// headers, netrc) comes from the environment.
oci::OciOptions OciOptionsFor(const RegistryArgs& args);

// How the commands that read a carton reach one at any location
// (loader/cartons.h): `args` for registries, the rest from the environment.
loader::AccessOptions AccessFor(const RegistryArgs& args);

}  // namespace carton::cli

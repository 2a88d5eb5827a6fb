// The Environment every shell starts from (carton/carton/environment.h):
// every kind of location the library reads (files, directories, http(s)
// URLs, oci:// references), and the defaults the process's environment
// gives (the cache root $CARTON_CACHE_DIR, the network rules
// $CARTON_ALLOWED_HOSTS and $CARTON_HTTP_TIMEOUT, the registries'
// credentials $CARTON_REGISTRY_AUTH: each read when it is needed). A shell
// sets what its flags, keywords or options say on top.
//
// Thread-safety: may be called from any thread.
#pragma once

#include "carton/carton/environment.h"
#include "carton/common/status.h"

namespace carton::loader {

// Errors: a configuration file the process's environment names that cannot
// be read (kNotFound, kIoError, kInvalidArgument naming it).
Result<Environment> DefaultEnvironment();

}  // namespace carton::loader

// Private: what every OCI operation starts with (push.cc, pull.cc):
// the parsed reference, a registry client and the blob cache.
#pragma once

#include <memory>
#include <string>

#include "carton/links/blob_cache.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"

namespace carton::oci::internal {

struct OciSession {
  OciReference ref;
  std::string where;  // the reference as given, for messages
  // The operation's policy; network.show_progress is off when more than one
  // blob moves at once (jobs > 1).
  Environment env;
  std::string cache_root;
  links::BlobCache cache{""};
  std::unique_ptr<oci::Client> client;
};

// Parses `reference`, finds the cache root and opens a client (credentials
// are looked up now). Errors: kInvalidArgument (a bad reference or
// options), and those of oci::Client::Open and DefaultCacheDir.
Result<OciSession> OpenOciSession(const Location& reference, const Environment& environment,
                                  const OciOptions& options);

}  // namespace carton::oci::internal

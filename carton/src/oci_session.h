// Private: what every OCI operation starts with (oci_push.cc, oci_pull.cc):
// the parsed reference, a registry client and the blob cache.
#pragma once

#include <memory>
#include <string>

#include "carton/carton/oci.h"
#include "carton/links/blob_cache.h"
#include "carton/links/oci.h"

namespace carton::internal {

struct OciSession {
  links::oci::Reference ref;
  std::string where;  // the reference as given, for messages
  std::string cache_root;
  links::BlobCache cache{""};
  std::unique_ptr<links::oci::Client> client;
};

// Parses `reference`, finds the cache root and opens a client (credentials
// are looked up now). Errors: kInvalidArgument (a bad reference or
// options), and those of links::oci::Client::Open and DefaultCacheDir.
Result<OciSession> OpenOciSession(const std::string& reference, const OciOptions& options);

}  // namespace carton::internal

#include "oci_remote.h"

#include "carton/oci/artifact.h"

namespace carton::loader::internal {
namespace {

oci::OciOptions OptionsFor(const LoadOptions& options) {
  oci::OciOptions o;
  o.cache_dir = options.cache_dir;
  o.threads = options.threads;
  o.client.registry_config = options.registry_config;
  o.client.plain_http = options.plain_http;
  // A load keeps every blob in the blob cache, as it always has.
  o.cache_large_blobs = true;
  return o;
}

}  // namespace

Result<manifest::Digest> ResolveOci(const std::string& reference, const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(oci::OciResolved r,
                          oci::ResolveOciCarton(reference, OptionsFor(options)));
  return r.manifest_hash;
}

Status PullOci(const std::string& reference, const std::string& dest_path,
               const LoadOptions& options) {
  return oci::PullCarton(reference, dest_path, OptionsFor(options)).status();
}

Result<CartonInfo> ReadOciInfo(const std::string& reference) { return oci::ReadOciInfo(reference); }

}  // namespace carton::loader::internal

#include "oci_remote.h"

namespace carton::loader::internal {
namespace {

oci::OciOptions OptionsFor(const LoadOptions& options) {
  oci::OciOptions o = OciOptionsFor(AccessFor(options), options.threads);
  o.allow_file_links = false;
  // A load keeps every blob in the blob cache, as it always has.
  o.cache_large_blobs = true;
  return o;
}

}  // namespace

AccessOptions AccessFor(const LoadOptions& options) {
  AccessOptions access;
  access.link.cache_dir = options.cache_dir;
  access.registry_config = options.registry_config;
  access.plain_http = options.plain_http;
  return access;
}

Result<std::optional<manifest::Digest>> ResolveOci(const Location& reference,
                                                   const LoadOptions& options) {
  CARTON_ASSIGN_OR_RETURN(oci::OciResolved r,
                          oci::ResolveOciCarton(reference, OptionsFor(options)));
  if (r.imported) return std::optional<manifest::Digest>();
  return std::optional<manifest::Digest>(r.manifest_hash);
}

Status PullOci(const Location& reference, const std::string& dest_path,
               const LoadOptions& options) {
  return oci::PullCarton(reference, dest_path, OptionsFor(options)).status();
}

}  // namespace carton::loader::internal

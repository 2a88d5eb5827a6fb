#include "session.h"

namespace carton::oci::internal {

Result<OciSession> OpenOciSession(const Location& reference, const OciOptions& options) {
  if (options.jobs < 1) return InvalidArgument("jobs must be at least 1");
  OciSession s;
  CARTON_RETURN_IF_ERROR(reference.status());
  if (reference.kind() != Location::Kind::kOci) {
    return reference.Refuse("a registry", "an oci://HOST[:PORT]/REPOSITORY[:TAG] reference");
  }
  s.ref = reference.oci();
  s.where = s.ref.ToString();
  if (!options.cache_dir.empty()) {
    s.cache_root = options.cache_dir;
  } else {
    CARTON_ASSIGN_OR_RETURN(s.cache_root, links::DefaultCacheDir());
  }
  s.cache = links::BlobCache(s.cache_root);
  oci::ClientOptions client = options.client;
  if (client.cache_root.empty()) client.cache_root = s.cache_root;
  // The progress lines of transfers running at once would overwrite each
  // other.
  if (options.jobs > 1) client.fetch.show_progress = false;
  auto opened = oci::Client::Open(s.ref.registry, client);
  if (!opened.ok()) return opened.status().WithContext(s.where);
  s.client = std::move(opened).value();
  return s;
}

}  // namespace carton::oci::internal

#include "session.h"

namespace carton::oci::internal {

Result<OciSession> OpenOciSession(const Location& reference, const Environment& environment,
                                  const OciOptions& options) {
  if (environment.jobs < 1) return InvalidArgument("jobs must be at least 1");
  OciSession s;
  CARTON_RETURN_IF_ERROR(reference.status());
  if (reference.kind() != Location::Kind::kOci) {
    return reference.Refuse("a registry", "an oci://HOST[:PORT]/REPOSITORY[:TAG] reference");
  }
  s.ref = reference.oci();
  s.where = s.ref.ToString();
  s.env = environment;
  CARTON_ASSIGN_OR_RETURN(s.cache_root, environment.CacheRoot());
  s.env.cache_dir = s.cache_root;
  s.cache = links::BlobCache(s.cache_root);
  // The progress lines of transfers running at once would overwrite each
  // other.
  if (s.env.jobs > 1) s.env.network.show_progress = false;
  auto opened = oci::Client::Open(s.ref.registry, s.env, options.client);
  if (!opened.ok()) return opened.status().WithContext(s.where);
  s.client = std::move(opened).value();
  return s;
}

}  // namespace carton::oci::internal

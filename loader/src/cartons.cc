// Operations on cartons at any location (cartons.h), and the loader's seam
// to OCI registries (oci_remote.h).
#include "carton/loader/cartons.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "cache_internal.h"
#include "carton/common/temporaries.h"
#include "carton/links/blob_cache.h"
#include "carton/links/cache_layout.h"
#include "carton/oci/artifact.h"
#include "oci_remote.h"

namespace carton::loader {
namespace {

Result<std::string> CacheRoot(const std::string& cache_dir) {
  if (!cache_dir.empty()) return cache_dir;
  return links::DefaultCacheDir();
}

}  // namespace

namespace internal {

oci::OciOptions OciOptionsFor(const AccessOptions& access, unsigned threads) {
  oci::OciOptions o;
  o.cache_dir = access.link.cache_dir;
  o.threads = threads;
  o.jobs = access.jobs;
  o.allow_file_links = access.link.fetch.allow_file_links;
  o.client.fetch = access.link.fetch;
  o.client.registry_config = access.registry_config;
  o.client.plain_http = access.plain_http;
  return o;
}

}  // namespace internal

// The pulled copy: removed with the LocalCarton, and by SIGINT/SIGTERM.
struct LocalCarton::Copy {
  explicit Copy(std::string p) : path(std::move(p)), registration(path, TemporaryKind::kFile) {}
  Copy(const Copy&) = delete;
  Copy& operator=(const Copy&) = delete;
  ~Copy() { ::unlink(path.c_str()); }
  std::string path;
  TemporaryPath registration;
};

LocalCarton::LocalCarton(Location location) : location_(std::move(location)) {}
LocalCarton::LocalCarton(LocalCarton&&) noexcept = default;
LocalCarton& LocalCarton::operator=(LocalCarton&&) noexcept = default;
LocalCarton::~LocalCarton() = default;

Result<LocalCarton> Localize(const Location& location, std::string_view operation,
                             const AccessOptions& options) {
  CARTON_RETURN_IF_ERROR(location.status());
  switch (location.kind()) {
    case Location::Kind::kFile:
    case Location::Kind::kUrl:
      return LocalCarton(location);
    case Location::Kind::kDirectory:
      return location.Refuse(operation, "a .carton file, an http(s) URL or an oci:// reference");
    case Location::Kind::kOci:
      break;
  }
  CARTON_ASSIGN_OR_RETURN(std::string root, CacheRoot(options.link.cache_dir));
  const std::string dir = links::CacheLayout(root).DownloadsDir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create: " + ec.message());
  static std::atomic<unsigned> counter{0};
  // Named by this process: gc removes it (and its temporaries) once the
  // process is gone, killed before it could.
  const std::string path = dir + "/" + std::string(links::kPulledCopyPrefix) +
                           std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) +
                           ".carton";
  // Registered before it exists, so that no moment leaves it unregistered.
  auto copy = std::make_unique<LocalCarton::Copy>(path);
  oci::OciOptions oci = internal::OciOptionsFor(options, 0);
  oci.cache_dir = root;
  // What is read whole is kept whole in the blob cache, as a load keeps it.
  oci.cache_large_blobs = true;
  CARTON_RETURN_IF_ERROR(oci::PullCarton(location, path, oci).status());
  LocalCarton local(location.WithLocalCopy(path));
  local.copy_ = std::move(copy);
  return local;
}

Result<manifest::Digest> GetManifestHash(const Location& location, const AccessOptions& options) {
  CARTON_RETURN_IF_ERROR(location.status());
  if (location.kind() == Location::Kind::kOci) {
    return oci::OciManifestHash(location, internal::OciOptionsFor(options, 0));
  }
  CARTON_ASSIGN_OR_RETURN(LocalCarton local, Localize(location, "hash", options));
  return ManifestHash(local.location(), options.link);
}

}  // namespace carton::loader

// The operations that read a carton (carton/carton/*.h: info, hash, ls,
// cat, diff, verify, unpack, fetch, shrink), for every kind of Location:
// a .carton file and an http(s) URL go to the operation as they are; an
// oci:// reference is pulled into the cache first (its blobs into the blob
// cache, the carton into <cache>/downloads/, removed when done), except for
// info and hash, which read only the reference's small blobs. A directory
// is refused by name: these operations read a packed carton (Load reads
// directories).
//
// Thread-safety: the functions may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "carton/carton/info.h"
#include "carton/carton/location.h"
#include "carton/carton/reader.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::loader {

// How an operation reaches a carton that is not a local file.
struct AccessOptions {
  // Fetching: URLs and linked files, and the cache root (link.cache_dir;
  // empty: links::DefaultCacheDir()).
  LinkOptions link;
  // oci:// references: a docker config.json with the registry's
  // credentials (empty: $CARTON_REGISTRY_AUTH, then
  // ~/.docker/config.json), plain HTTP for a registry that is not on a
  // loopback address, blobs moved at once.
  std::string registry_config;
  bool plain_http = false;
  unsigned jobs = 4;
};

// A carton ready for the operations of carton/carton/*.h: the location
// itself, or for an oci:// reference the same location with a local copy
// pulled into the cache (Location::WithLocalCopy), removed with this
// object (and by SIGINT/SIGTERM, common/temporaries.h). Move-only.
class LocalCarton {
 public:
  LocalCarton(LocalCarton&&) noexcept;
  LocalCarton& operator=(LocalCarton&&) noexcept;
  ~LocalCarton();

  const Location& location() const { return location_; }

 private:
  struct Copy;
  friend Result<LocalCarton> Localize(const Location&, std::string_view, const AccessOptions&);
  explicit LocalCarton(Location location);

  Location location_;
  std::unique_ptr<Copy> copy_;
};

// Makes `location` readable by the carton operations. `operation` names
// the command in a refusal ("verify", "unpack"). Errors: location.status();
// kInvalidArgument for a directory ("<operation> takes a .carton file, an
// http(s) URL or an oci:// reference; DIR is a directory"); for an oci://
// reference those of oci::PullCarton.
Result<LocalCarton> Localize(const Location& location, std::string_view operation,
                             const AccessOptions& options = {});

// The manifest hash (ManifestHash; an oci:// reference from its MANIFEST
// blob, loader.h GetModelInfo likewise reads only metadata). Errors: as
// ManifestHash and oci::OciManifestHash.
Result<manifest::Digest> GetManifestHash(const Location& location,
                                         const AccessOptions& options = {});

}  // namespace carton::loader

// Environment: the one policy value every operation on a carton takes —
// where the cache is, how the network is reached (timeouts, retries, the
// allowlist and credentials, file:// links, registries), how many threads
// to use, which kinds of location can be read, and whom to trust. A shell
// (the CLI, the C API, Python, a server) builds one from its flags, keywords
// or options once and passes it by const reference; operations never copy
// its settings into option structs of their own, and take their
// per-operation settings (a progress callback, limits, a format) in their
// own options.
//
//   carton::Environment env = carton::loader::DefaultEnvironment().value();
//   env.threads = 8;
//   auto source = carton::OpenSource("oci://registry/team/model:v3", env);
//
// Ownership: a value type; the source kinds and the trust policy are shared,
// immutable, and live as long as any copy. Thread-safety: const methods may
// be called concurrently; one Environment may serve many operations at once.
#pragma once

#include <memory>
#include <string>

#include "carton/common/status.h"
#include "carton/net/fetch.h"

namespace carton {

namespace sign {
class TrustPolicy;
}  // namespace sign

class SourceKinds;

struct Environment {
  // The cache root (blobs, cartons, downloads: links/cache_layout.h). Empty:
  // links::DefaultCacheDir() ($CARTON_CACHE_DIR, $XDG_CACHE_HOME/carton,
  // ~/.cache/carton), resolved when an operation first needs it.
  std::string cache_dir;

  // The network rules of every transfer (net/fetch.h): timeouts, retries,
  // redirects, the allowlist and per-host credentials (`access`; nullopt:
  // $CARTON_ALLOWED_HOSTS and friends, read at each call), whether LINKS may
  // name file:// URLs (`allow_file_links`: trusted cartons only), and
  // whether a progress line is drawn. The per-transfer fields (headers,
  // progress callbacks, partial files, size caps) are the operation's own:
  // it sets them on its copy.
  net::FetchOptions network;

  // OCI registries: a docker config.json with the registries' credentials
  // (empty: $CARTON_REGISTRY_AUTH, then $DOCKER_CONFIG/config.json and
  // ~/.docker/config.json), plain HTTP for a registry that is not on a
  // loopback address (loopback registries always get it), and how many
  // blobs move at once (>= 1; with more than one, no per-blob progress).
  std::string registry_config;
  bool plain_http = false;
  unsigned jobs = 4;

  // Threads for hashing, copying and compressing (0: one per core). The
  // bytes an operation writes never depend on it.
  unsigned threads = 0;

  // Kinds of location beyond the built-in ones (a file, a directory, an
  // http(s) URL), each a source registered by the module that reads it
  // (oci::AddOciSource); null: none.
  std::shared_ptr<const SourceKinds> sources;

  // Whose signatures are trusted, and where a signature is required
  // (sign/); null: no policy, nothing is required.
  std::shared_ptr<const sign::TrustPolicy> trust;

  // cache_dir, or DefaultCacheDir() when it is empty. Errors: kNotFound
  // when no cache directory can be named.
  Result<std::string> CacheRoot() const;
};

}  // namespace carton

#include "carton/carton/environment.h"

#include "carton/links/blob_cache.h"

namespace carton {

Result<std::string> Environment::CacheRoot() const {
  if (!cache_dir.empty()) return cache_dir;
  return links::DefaultCacheDir();
}

}  // namespace carton

// Private: the carton a Load reads, opened lazily. Its MANIFEST is read
// first and cheaply (a cache hit needs nothing else); the whole archive is
// opened, checked and, for a URL, downloaded only on a miss, and MANIFEST is
// not read again then (loader/FORMAT.md "Cache", "URLs").
//
// A local .carton is opened and mapped once: the lookup reads the end
// records, the central directory and MANIFEST with pread(2) through that
// file, and a miss reads the archive through the same mapping and
// descriptor (which the cache entry hard-links). A URL's MANIFEST is read
// with HTTP range requests; a miss downloads the carton into the cache's
// downloads directory (removed when the source is destroyed).
//
// Not thread-safe; one per load.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "carton/carton/reader.h"
#include "carton/common/mapped_file.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/common/temporaries.h"
#include "carton/links/cache_layout.h"

namespace carton::loader::internal {

class CartonSource {
 public:
  // Opens `path_or_url` and reads its MANIFEST. A local archive the quick
  // read cannot handle is opened whole at once. A URL whose server ignores
  // Range is downloaded whole at once into `downloads_dir` (a temporary
  // name, kept as the source), with `progress`. Errors: kNotFound,
  // kIoError, kCorrupt (naming the carton), the URL's network errors.
  static Result<CartonSource> Open(const Location& location, const std::string& downloads_dir,
                                   const ProgressFn& progress = {});
  // A carton known by its manifest hash alone until a miss, when `fetch`
  // writes it whole to a path (an oci:// reference: the registry names
  // MANIFEST's digest; the carton is pulled on a miss). Whole() refuses a
  // fetched carton whose MANIFEST does not hash to `manifest_hash`.
  using FetchFn = std::function<Status(const std::string& dest_path)>;
  static CartonSource Fetched(std::string location, const manifest::Digest& manifest_hash,
                              FetchFn fetch);

  CartonSource(CartonSource&&) noexcept;
  CartonSource& operator=(CartonSource&&) noexcept;
  ~CartonSource();

  const std::string& location() const { return location_; }
  // The manifest hash: MANIFEST's, or the one a fetched source was given.
  const manifest::Digest& manifest_hash() const;

  // The whole archive, checked by every carton reader's rules
  // (CartonReader::Check), opened once: the local file, the URL
  // downloaded into the cache (CachedCartonDownload), or the pulled carton
  // (layout's downloads directory, "<manifest hash>-<n>.carton").
  // `progress`, when set, gets the download's progress instead of the
  // default line on stderr. Errors name the carton: kCorrupt,
  // kUnsupported, kNetworkError, kIoError.
  Result<const CartonReader*> Whole(const links::CacheLayout& layout,
                                    const ProgressFn& progress = {});
  // The mapped file of the whole archive (its descriptor is what the
  // entry hard-links and copies from). REQUIRES: Whole() succeeded.
  const MappedFile& file() const { return *file_; }

 private:
  CartonSource() = default;
  Status OpenWhole();

  std::string location_;
  std::shared_ptr<const MappedFile> file_;  // the local file or the download
  std::shared_ptr<const ManifestFile> manifest_;
  std::optional<CartonReader> whole_;
  std::string download_;                          // a pulled copy, removed on destruction
  TemporaryPath download_registration_;           // an interrupt removes it too
  std::unique_ptr<CachedCartonDownload> cached_;  // a URL's download
  FetchFn fetch_;                                 // set for a fetched source
  manifest::Digest fetched_hash_{};
};

}  // namespace carton::loader::internal

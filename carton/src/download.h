// Private: a carton given by URL, downloaded whole and mapped, owned by the
// URL source that reads it (url_source.cc) and removed with it, and by
// SIGINT/SIGTERM (common/temporaries.h).
//
//   CachedCartonDownload     <cache>/downloads/<manifest hash>.carton: what
//                            arrived before an interrupt is kept as
//                            .partial and resumed with Range by the next
//                            download of the same carton (only with the
//                            server's validator: no sha256 of the whole
//                            carton is known; its MANIFEST and files are
//                            checked when it is read). REQUIRES: the
//                            carton's lock (CacheLayout::CartonLockPath) is
//                            held exclusively while it lives.
//   TemporaryCartonDownload  <cache>/downloads/.carton-download-<pid>-<n>.carton
//                            (the system's temporary directory when there is
//                            no cache): a server that ignores Range, or a
//                            carton whose range reads fail.
#pragma once

#include <memory>
#include <string>

#include "carton/carton/environment.h"
#include "carton/common/file_lock.h"
#include "carton/common/mapped_file.h"
#include "carton/common/status.h"
#include "carton/common/temporaries.h"
#include "carton/links/cache_layout.h"
#include "carton/net/fetch.h"

namespace carton::internal {

class CartonDownload {
 public:
  virtual ~CartonDownload();
  CartonDownload(const CartonDownload&) = delete;
  CartonDownload& operator=(const CartonDownload&) = delete;

  const std::string& path() const { return path_; }
  // The downloaded file, mapped (the mapping outlives the file's removal).
  const std::shared_ptr<const MappedFile>& file() const { return file_; }
  // Holds `lock` until the file is removed.
  void KeepLock(FileLock lock) { lock_ = std::move(lock); }

 protected:
  explicit CartonDownload(std::string path);
  // Downloads `url` to path() (atomically) with `fetch`, and maps it.
  Status Download(const std::string& url, const net::FetchOptions& fetch);

 private:
  FileLock lock_;  // first: released after the file is removed
  std::string path_;
  TemporaryPath registration_;
  std::shared_ptr<const MappedFile> file_;
};

class CachedCartonDownload final : public CartonDownload {
 public:
  // Errors: those of net::DownloadToFile; kIoError when downloads/ cannot be
  // made.
  static Result<std::unique_ptr<CartonDownload>> Fetch(const std::string& url,
                                                       const links::CacheLayout& layout,
                                                       const std::string& hex,
                                                       net::FetchOptions fetch);

 private:
  using CartonDownload::CartonDownload;
};

class TemporaryCartonDownload final : public CartonDownload {
 public:
  // Errors: those of net::DownloadToFile.
  static Result<std::unique_ptr<CartonDownload>> Fetch(const std::string& url,
                                                       const Environment& environment,
                                                       const net::FetchOptions& fetch);

 private:
  using CartonDownload::CartonDownload;
};

}  // namespace carton::internal

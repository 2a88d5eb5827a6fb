#include "download.h"

#include <unistd.h>

#include <filesystem>

#include "carton/net/fetch.h"

namespace carton::internal {

CartonDownload::CartonDownload(std::string path)
    : path_(std::move(path)), registration_(path_, TemporaryKind::kFile) {}

// The mapping stays valid once the name is gone.
CartonDownload::~CartonDownload() { ::unlink(path_.c_str()); }

Status CartonDownload::Download(const std::string& url, const net::FetchOptions& fetch) {
  CARTON_RETURN_IF_ERROR(net::DownloadToFile(url, path_, fetch));
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path_));
  file_ = std::make_shared<const MappedFile>(std::move(file));
  return Status::Ok();
}

Result<std::unique_ptr<CartonDownload>> CachedCartonDownload::Fetch(
    const std::string& url, const links::CacheLayout& layout, const std::string& hex,
    net::FetchOptions fetch) {
  std::error_code ec;
  std::filesystem::create_directories(layout.DownloadsDir(), ec);
  if (ec) return IoError(layout.DownloadsDir() + ": cannot create: " + ec.message());
  // Registered before it exists, so that no moment leaves it unregistered.
  std::unique_ptr<CachedCartonDownload> d(new CachedCartonDownload(layout.CartonDownloadPath(hex)));
  fetch.keep_partial = true;
  CARTON_RETURN_IF_ERROR(d->Download(url, fetch));
  return std::unique_ptr<CartonDownload>(std::move(d));
}

Result<std::unique_ptr<CartonDownload>> TemporaryCartonDownload::Fetch(
    const std::string& url, const Environment& environment, const net::FetchOptions& fetch) {
  std::string dir;
  if (auto root = environment.CacheRoot(); root.ok()) {
    dir = links::CacheLayout(*root).DownloadsDir();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) dir.clear();
  }
  std::string path;
  if (!dir.empty()) {
    path = links::CacheLayout::ProcessDownloadPath(dir, links::kDownloadCopyPrefix);
  } else {
    std::error_code ec;
    const std::string tmp = std::filesystem::temp_directory_path(ec).string();
    path = links::CacheLayout::ProcessDownloadPath(ec ? "." : tmp, links::kDownloadCopyPrefix);
  }
  std::unique_ptr<TemporaryCartonDownload> d(new TemporaryCartonDownload(std::move(path)));
  CARTON_RETURN_IF_ERROR(d->Download(url, fetch));
  return std::unique_ptr<CartonDownload>(std::move(d));
}

}  // namespace carton::internal

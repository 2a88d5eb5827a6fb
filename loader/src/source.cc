#include "source.h"

#include <unistd.h>

#include <filesystem>
#include <random>
#include <utility>

#include "carton/common/random_access.h"
#include "carton/manifest/sha256.h"

namespace carton::loader::internal {

Result<CartonSource> CartonSource::Open(const Location& location, const std::string& downloads_dir,
                                        const ProgressFn& progress) {
  CARTON_RETURN_IF_ERROR(location.status());
  const std::string& path_or_url = location.text();
  CartonSource s;
  s.location_ = path_or_url;
  if (location.kind() == Location::Kind::kUrl) {
    // Range requests: the zip's tail, its central directory, MANIFEST.
    LinkOptions link;
    link.fetch.progress = progress;
    std::error_code ec;
    std::filesystem::create_directories(downloads_dir, ec);
    if (!ec) link.temp_dir = downloads_dir;
    CARTON_ASSIGN_OR_RETURN(CartonReader remote,
                            CartonReader::Open(location, link, CartonLimits{}));
    CARTON_RETURN_IF_ERROR(remote.ReadManifest().WithContext(path_or_url));
    s.manifest_ = remote.shared_manifest();
    if (const std::string copy = remote.downloaded_copy(); !copy.empty()) {
      // The server ignores Range, so the reader downloaded the carton
      // whole: keep that copy (mapped, it outlives its name) rather than
      // download it again on a miss.
      CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(copy));
      s.file_ = std::make_shared<const MappedFile>(std::move(file));
    }
    return s;
  }
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path_or_url));
  s.file_ = std::make_shared<const MappedFile>(std::move(file));
  // A hit is decided by MANIFEST alone: the entry's files were checked
  // against it when the entry was made, so what else this file holds does
  // not matter. Reading it with pread through the end records and the
  // central directory touches none of the other bytes of the archive, so
  // a hit costs the same for any size of model, its pages cold or warm.
  auto quick = CartonReader::OpenSource(FileSourceOf(s.file_));
  if (quick.ok() && quick->ReadManifest().ok()) {
    s.manifest_ = quick->shared_manifest();
    return s;
  }
  // An archive the quick read cannot handle is read whole, which names
  // the problem if there is one.
  CARTON_RETURN_IF_ERROR(s.OpenWhole());
  return s;
}

CartonSource CartonSource::Fetched(std::string location, const manifest::Digest& manifest_hash,
                                   FetchFn fetch) {
  CartonSource s;
  s.location_ = std::move(location);
  s.fetch_ = std::move(fetch);
  s.fetched_hash_ = manifest_hash;
  return s;
}

const manifest::Digest& CartonSource::manifest_hash() const {
  return manifest_ != nullptr ? manifest_->hash : fetched_hash_;
}

CartonSource::CartonSource(CartonSource&&) noexcept = default;
CartonSource& CartonSource::operator=(CartonSource&&) noexcept = default;

CartonSource::~CartonSource() {
  if (!download_.empty()) ::unlink(download_.c_str());
}

Status CartonSource::OpenWhole() {
  CARTON_ASSIGN_OR_RETURN(CartonReader reader,
                          CartonReader::OpenFile(file_, CartonLimits{}, manifest_, location_));
  CARTON_RETURN_IF_ERROR(reader.Check());
  if (manifest_ == nullptr) manifest_ = reader.shared_manifest();
  whole_.emplace(std::move(reader));
  return Status::Ok();
}

Result<const CartonReader*> CartonSource::Whole(const links::CacheLayout& layout,
                                                const ProgressFn& progress) {
  if (whole_) return &*whole_;
  if (file_ == nullptr) {
    std::string dest;
    if (fetch_) {
      // A pulled carton has no resumable download: a name of its own.
      std::error_code ec;
      std::filesystem::create_directories(layout.DownloadsDir(), ec);
      std::random_device rd;
      dest = layout.DownloadsDir() + "/" + manifest::ToHex(manifest_hash()) + "-" +
             std::to_string(rd()) + ".carton";
      download_ = dest;  // removed on destruction, also after a failed fetch
      download_registration_ = TemporaryPath(dest, TemporaryKind::kFile);
      CARTON_RETURN_IF_ERROR(fetch_(dest));
    } else {
      // A URL's download runs under the hash's materialize lock
      // (AcquireEntry), resumable by the next load (CachedCartonDownload).
      LinkOptions link;
      link.fetch.progress = progress;
      CARTON_ASSIGN_OR_RETURN(cached_,
                              CachedCartonDownload::Fetch(location_, layout.root(),
                                                          manifest::ToHex(manifest_hash()), link));
      dest = cached_->path();
    }
    CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(dest));
    file_ = std::make_shared<const MappedFile>(std::move(file));
  }
  CARTON_RETURN_IF_ERROR(OpenWhole());
  if (fetch_ && manifest_->hash != fetched_hash_) {
    return Corrupt(location_ + ": MANIFEST hashes to " + manifest::ToHex(manifest_->hash) +
                   ", but the reference names " + manifest::ToHex(fetched_hash_));
  }
  return &*whole_;
}

}  // namespace carton::loader::internal

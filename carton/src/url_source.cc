// The source of an http(s) URL (source.h): read with range requests (the
// zip's tail, its central directory, the entries read); downloaded whole
// when every byte will be read, into the cache's downloads/ under the
// manifest hash (resumed with Range by the next download of the same
// carton), or into a temporary file when that cannot be done. A server that
// ignores Range is read from a temporary download at once.
#include <memory>
#include <optional>

#include "carton/common/file_lock.h"
#include "carton/common/notice.h"
#include "carton/common/temporaries.h"
#include "carton/links/cache_layout.h"
#include "carton/net/http_source.h"
#include "download.h"
#include "sources.h"

namespace carton::internal {
namespace {

// A range read's failure that a whole download would meet too, or could not
// be trusted after: the server is unreachable, refuses the URL, or answers a
// range wrongly (a bad Content-Range, a changed ETag).
bool StaysError(const Status& s) {
  return s.code() == StatusCode::kNetworkError || s.code() == StatusCode::kNotFound;
}

class UrlSource final : public CartonSource {
 public:
  UrlSource(const Location& location, const Environment& environment, const SourceOptions& options)
      : CartonSource(location, environment, options) {}

  Result<CartonReader*> Reader(ReadScope scope) override {
    if (whole_) return &*whole_;
    if (scope == ReadScope::kEntries && ranged_) return &*ranged_;
    if (scope == ReadScope::kEntries) return OpenRanged();
    return OpenWhole(scope == ReadScope::kWholeUnderCartonLock);
  }

  std::shared_ptr<const MappedFile> file() const override {
    return download_ != nullptr ? download_->file() : nullptr;
  }

  sign::TrustTarget TrustTarget() const override {
    sign::TrustTarget t;
    t.kind = sign::TrustTarget::Kind::kUrl;
    t.url = location().text();
    return t;
  }

 private:
  // kUnsupported: the server ignores Range (it answered 200; the range
  // source stopped reading at once).
  Result<CartonReader> RangeReader() {
    net::HttpSourceOptions http;
    http.fetch = environment().network;
    CARTON_ASSIGN_OR_RETURN(auto source, net::HttpRangeSource::Open(location().text(), http));
    return CartonReader::OpenSource(std::move(source), options().limits);
  }

  Result<CartonReader*> OpenRanged() {
    auto reader = RangeReader();
    if (reader.ok()) {
      ranged_.emplace(std::move(reader).value());
      return &*ranged_;
    }
    if (reader.status().code() != StatusCode::kUnsupported) return reader.status();
    Notice(location().text() + ": the server ignores range requests; downloading it whole");
    return DownloadTemporary();
  }

  // Into the cache under the manifest hash the range reads give, when they
  // can; a temporary download otherwise.
  Result<CartonReader*> OpenWhole(bool lock_held) {
    if (!ranged_) {
      auto reader = RangeReader();
      if (!reader.ok()) {
        if (StaysError(reader.status())) return reader.status();
        return DownloadTemporary();
      }
      ranged_.emplace(std::move(reader).value());
    }
    if (Status m = ranged_->ReadManifest(); !m.ok()) {
      // A bad MANIFEST is read from the whole download, where its problems
      // are reported as they are for a file.
      if (StaysError(m)) return m;
      return DownloadTemporary();
    }
    const std::string hex = manifest::ToHex(ranged_->manifest_file().hash);
    auto root = environment().CacheRoot();
    if (!root.ok()) return DownloadTemporary();
    const links::CacheLayout layout(*root);
    FileLock lock;
    if (!lock_held) {
      auto opened = FileLock::Open(layout.CartonLockPath(hex));
      if (!opened.ok() || !opened->Lock(FileLock::Mode::kExclusive).ok()) {
        return DownloadTemporary();
      }
      lock = std::move(opened).value();
    }
    CARTON_ASSIGN_OR_RETURN(download_, CachedCartonDownload::Fetch(location().text(), layout, hex,
                                                                   DownloadFetchOptions()));
    download_->KeepLock(std::move(lock));
    return OpenDownload();
  }

  Result<CartonReader*> DownloadTemporary() {
    CARTON_ASSIGN_OR_RETURN(
        download_,
        TemporaryCartonDownload::Fetch(location().text(), environment(), DownloadFetchOptions()));
    return OpenDownload();
  }

  // MANIFEST is read again from the download: what the range reads found
  // names the download, and the loader checks the two agree.
  Result<CartonReader*> OpenDownload() {
    CARTON_ASSIGN_OR_RETURN(
        CartonReader reader,
        CartonReader::OpenFile(download_->file(), options().limits, nullptr, location().text()));
    whole_.emplace(std::move(reader));
    return &*whole_;
  }

  std::optional<CartonReader> ranged_;
  std::unique_ptr<CartonDownload> download_;  // before whole_: outlives its reader
  std::optional<CartonReader> whole_;
};

}  // namespace

std::unique_ptr<CartonSource> MakeUrlSource(const Location& location,
                                            const Environment& environment,
                                            const SourceOptions& options) {
  return std::make_unique<UrlSource>(location, environment, options);
}

}  // namespace carton::internal

// Cartons by URL and linked files (links.h).
#include <unistd.h>

#include <cctype>
#include <random>
#include <set>

#include "archive.h"
#include "carton/carton/links.h"
#include "carton/links/blob_cache.h"
#include "carton/links/http_source.h"

namespace carton {
namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

Result<links::BlobCache> OpenCache(const LinkOptions& options) {
  if (!options.cache_dir.empty()) return links::BlobCache(options.cache_dir);
  return links::BlobCache::OpenDefault();
}

}  // namespace

bool IsCartonUrl(std::string_view location) {
  return StartsWithNoCase(location, "http://") || StartsWithNoCase(location, "https://");
}

Result<ZipReader> OpenCarton(const std::string& location, const LinkOptions& options,
                             const ZipReaderOptions& zip) {
  if (!IsCartonUrl(location)) return ZipReader::Open(location, zip);
  links::HttpSourceOptions http;
  http.fetch = options.fetch;
  CARTON_ASSIGN_OR_RETURN(auto source, links::HttpRangeSource::Open(location, http));
  return ZipReader::OpenSource(std::move(source), zip);
}

Result<LocalCarton> LocalCarton::Make(const std::string& location, const std::string& temp_dir,
                                      const LinkOptions& options) {
  LocalCarton c;
  if (!IsCartonUrl(location)) {
    c.path_ = location;
    return c;
  }
  std::random_device rd;
  std::string path = temp_dir + "/.carton-download-" + std::to_string(::getpid()) + "-" +
                     std::to_string(rd()) + ".carton";
  links::FetchOptions fetch = options.fetch;
  fetch.progress_label = location;
  CARTON_RETURN_IF_ERROR(links::DownloadToFile(location, path, fetch));
  c.path_ = std::move(path);
  c.temporary_ = true;
  return c;
}

LocalCarton::LocalCarton(LocalCarton&& o) noexcept
    : path_(std::move(o.path_)), temporary_(std::exchange(o.temporary_, false)) {}

LocalCarton& LocalCarton::operator=(LocalCarton&& o) noexcept {
  if (this != &o) {
    if (temporary_) ::unlink(path_.c_str());
    path_ = std::move(o.path_);
    temporary_ = std::exchange(o.temporary_, false);
  }
  return *this;
}

LocalCarton::~LocalCarton() {
  if (temporary_) ::unlink(path_.c_str());
}

Result<std::optional<links::Links>> ReadLinks(const ZipReader& zip,
                                              const links::LinksLimits& limits) {
  const ZipEntry* e = zip.Find("LINKS");
  if (e == nullptr) return std::optional<links::Links>();
  if (e->is_dir) return Corrupt("LINKS: is a directory, not a file");
  CARTON_ASSIGN_OR_RETURN(std::string text, internal::ReadTextEntry(zip, "LINKS", limits.max_size));
  CARTON_ASSIGN_OR_RETURN(links::Links parsed, links::ParseLinks(text, limits));
  return std::optional<links::Links>(std::move(parsed));
}

Result<std::vector<LinkedFile>> LinkedFiles(const ZipReader& zip, const manifest::Manifest& m,
                                            const std::optional<links::Links>& links) {
  std::vector<LinkedFile> out;
  for (const auto& me : m.entries()) {
    const ZipEntry* e = zip.Find(me.path);
    if (e != nullptr && !e->is_dir) continue;
    const std::vector<std::string>* urls = nullptr;
    if (links) {
      auto it = links->urls.find(me.sha256);
      if (it != links->urls.end()) urls = &it->second;
    }
    if (urls == nullptr) {
      return Corrupt(me.path + ": listed in MANIFEST but not in the archive, and " +
                     (links ? "LINKS has no url for its sha256 " + manifest::ToHex(me.sha256)
                            : std::string("there is no LINKS")));
    }
    out.push_back({me.path, me.sha256, *urls});
  }
  if (links) {
    // Stricter than the spec (carton/FORMAT.md K3): a hash that names no
    // file of this carton is a stale or mistaken LINKS, or urls smuggled in
    // for something the carton does not hold.
    std::set<manifest::Digest> listed;
    for (const auto& me : m.entries()) listed.insert(me.sha256);
    for (const auto& [digest, urls] : links->urls) {
      if (listed.count(digest) == 0) return Corrupt("LINKS: " + StrayLinksHash(digest));
    }
  }
  return out;
}

std::string StrayLinksHash(const manifest::Digest& digest) {
  return "sha256 " + manifest::ToHex(digest) +
         " names no file in MANIFEST (every LINKS hash must be a MANIFEST file's)";
}

Result<std::string> ResolveLinkedFile(const LinkedFile& file, const LinkOptions& options,
                                      bool rehash) {
  CARTON_ASSIGN_OR_RETURN(links::BlobCache cache, OpenCache(options));
  if (rehash) {
    auto hit = cache.Get(file.sha256);
    // A blob that fails its rehash has been discarded: fetch it again.
    if (hit.ok() && cache.Verify(file.sha256).ok()) return hit;
  }
  links::FetchOptions fetch = options.fetch;
  fetch.progress_label = file.path;
  return cache.Fetch(file.sha256, file.urls, 0, fetch);
}

std::string_view BlobEncodingName(BlobEncoding e) {
  switch (e) {
    case BlobEncoding::kZstd:
      return "zstd";
    case BlobEncoding::kBrotli:
      return "br";
    case BlobEncoding::kGzip:
      return "gzip";
  }
  return "?";
}

std::string_view BlobEncodingSuffix(BlobEncoding e) {
  switch (e) {
    case BlobEncoding::kZstd:
      return ".zst";
    case BlobEncoding::kBrotli:
      return ".br";
    case BlobEncoding::kGzip:
      return ".gz";
  }
  return "";
}

Result<BlobEncoding> ParseBlobEncoding(std::string_view name) {
  for (BlobEncoding e : {BlobEncoding::kZstd, BlobEncoding::kBrotli, BlobEncoding::kGzip}) {
    if (name == BlobEncodingName(e)) return e;
  }
  return InvalidArgument("encoding \"" + std::string(name) + "\" is not zstd, br or gzip");
}

}  // namespace carton

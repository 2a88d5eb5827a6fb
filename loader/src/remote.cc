#include "remote.h"

#include "carton/carton/links.h"
#include "carton/carton/zip.h"
#include "carton/links/fetch.h"

namespace carton::loader::internal {

namespace {
constexpr std::uint64_t kMaxManifestSize = 64ull << 20;
}  // namespace

Result<std::string> ReadRemoteManifest(const std::string& url) {
  // Range requests: the zip's tail, its central directory, MANIFEST.
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, OpenCarton(url));
  const ZipEntry* e = zip.Find("MANIFEST");
  if (e == nullptr) return Corrupt(url + ": MANIFEST: missing");
  if (e->size > kMaxManifestSize) return Corrupt(url + ": MANIFEST: too large");
  auto bytes = zip.Read("MANIFEST");
  if (!bytes.ok()) return bytes.status().WithContext(url);
  return std::string(AsChars(*bytes));
}

Status DownloadCarton(const std::string& url, const std::string& dest_path) {
  links::FetchOptions options;
  options.show_progress = true;
  return links::DownloadToFile(url, dest_path, options);
}

Result<CartonInfo> ReadRemoteInfo(const std::string& url) { return ReadInfo(url); }

}  // namespace carton::loader::internal

#include "remote.h"

namespace carton::loader::internal {
namespace {

Status NotYet(const std::string& url) {
  return Unsupported(url + ": loading cartons over http(s) is not supported yet; "
                     "download the file and load it by path");
}

}  // namespace

Result<std::string> ReadRemoteManifest(const std::string& url) { return NotYet(url); }

Status DownloadCarton(const std::string& url, const std::string&) { return NotYet(url); }

Result<CartonInfo> ReadRemoteInfo(const std::string& url) { return NotYet(url); }

}  // namespace carton::loader::internal

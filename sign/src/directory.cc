// Listing and hashing a directory as the OMS "files" method does
// (sign/FORMAT.md "The file list"), for folders signed by any tool.
#include <sys/stat.h>

#include <filesystem>

#include "carton/common/quote.h"
#include "carton/manifest/hash_files.h"
#include "carton/sign/files.h"

namespace carton::sign {
namespace {

namespace fs = std::filesystem;

struct Listing {
  std::vector<std::string> names;  // relative, "/"-separated
  std::vector<std::string> paths;  // what to hash
};

struct Walk {
  const fs::path& root;
  const fs::path& real_root;
  const HashDirectoryOptions& options;
  std::vector<std::string> ignore;
  Listing* out;
};

// A symlink at `rel`: its target, when allowed and inside the directory.
Result<std::string> FollowSymlink(const Walk& w, const fs::path& at, const std::string& rel) {
  const std::string shown = QuoteForMessage(rel);
  if (!w.options.allow_symlinks) {
    return InvalidArgument(shown + ": a symlink, and the signature does not allow symlinks");
  }
  std::error_code ec;
  const fs::path target = fs::canonical(at, ec);
  if (ec) return InvalidArgument(shown + ": a symlink that does not resolve: " + ec.message());
  const auto [end, unused] =
      std::mismatch(w.real_root.begin(), w.real_root.end(), target.begin(), target.end());
  if (end != w.real_root.end()) return InvalidArgument(shown + ": a symlink out of the directory");
  if (!fs::is_regular_file(target, ec)) {
    return InvalidArgument(shown + ": a symlink to something other than a regular file");
  }
  return target.string();
}

// One entry of a directory being listed; directories go on `pending`.
Status Visit(const Walk& w, const fs::directory_entry& e, const std::string& rel,
             std::vector<std::pair<fs::path, std::string>>* pending) {
  if (IsIgnored(rel, w.ignore)) return Status::Ok();
  CARTON_RETURN_IF_ERROR(ValidateResourceName(rel, "file name"));
  std::error_code ec;
  const fs::file_status st = e.symlink_status(ec);
  if (ec) return IoError(e.path().string() + ": " + ec.message());
  if (fs::is_symlink(st)) {
    CARTON_ASSIGN_OR_RETURN(std::string target, FollowSymlink(w, e.path(), rel));
    w.out->names.push_back(rel);
    w.out->paths.push_back(std::move(target));
  } else if (fs::is_directory(st)) {
    pending->emplace_back(e.path(), rel);
  } else if (fs::is_regular_file(st)) {
    w.out->names.push_back(rel);
    w.out->paths.push_back(e.path().string());
  } else {
    return InvalidArgument(QuoteForMessage(rel) + ": not a regular file, directory or symlink");
  }
  return Status::Ok();
}

Status ListTree(const Walk& w) {
  std::vector<std::pair<fs::path, std::string>> pending = {{w.root, ""}};
  while (!pending.empty()) {
    auto [dir, prefix] = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      CARTON_RETURN_IF_ERROR(Visit(w, *it, prefix.empty() ? name : prefix + "/" + name, &pending));
    }
    if (ec) return IoError(dir.string() + ": " + ec.message());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Resource>> HashDirectory(const std::string& dir,
                                            const HashDirectoryOptions& options) {
  std::error_code ec;
  const fs::path root(dir);
  if (!fs::is_directory(root, ec)) {
    if (!fs::exists(root, ec)) return NotFound(dir + ": no such directory");
    return InvalidArgument(dir + ": not a directory");
  }
  const fs::path real_root = fs::canonical(root, ec);
  if (ec) return IoError(dir + ": " + ec.message());
  Listing listing;
  Walk w{root, real_root, options, options.ignore_paths, &listing};
  w.ignore.insert(w.ignore.end(), kDefaultIgnorePaths.begin(), kDefaultIgnorePaths.end());
  CARTON_RETURN_IF_ERROR(ListTree(w));
  CARTON_ASSIGN_OR_RETURN(
      std::vector<manifest::Digest> digests,
      manifest::HashFiles(listing.paths, options.threads, {}, options.on_bytes));
  std::vector<Resource> out(listing.names.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].name = std::move(listing.names[i]);
    out[i].digest = digests[i];
  }
  SortByComponents(&out);
  return out;
}

}  // namespace carton::sign

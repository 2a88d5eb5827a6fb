#include "pack_walk.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include "carton/manifest/manifest.h"

namespace carton::internal {
namespace {

namespace fs = std::filesystem;

bool Inside(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

std::string TypeName(fs::file_type t) {
  switch (t) {
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::character:
      return "a character device";
    default:
      return "not a regular file";
  }
}

// "MANIFEST" or "LINKS" when the first component of `rel` is one of them
// in any ASCII letter case: pack writes MANIFEST and shrink writes LINKS, so
// a file or directory of that name would collide with them.
std::optional<std::string_view> ReservedTopLevelName(std::string_view rel) {
  std::string first(rel.substr(0, rel.find('/')));
  for (char& c : first) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  for (std::string_view name : {"MANIFEST", "LINKS"}) {
    if (first == name) return name;
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<SourceFile>> WalkModelDir(const std::string& dir, const std::string& skip) {
  std::error_code ec;
  fs::path root = fs::canonical(dir, ec);
  if (ec) return NotFound(dir + ": " + ec.message());
  if (!fs::is_directory(root, ec)) return InvalidArgument(dir + ": not a directory");
  fs::path skipped;
  if (!skip.empty()) skipped = fs::weakly_canonical(skip, ec);
  if (ec) skipped.clear();

  std::vector<SourceFile> files;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return IoError(dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return IoError(dir + ": " + ec.message());
    const fs::path& p = it->path();
    std::string rel = p.lexically_relative(root).generic_string();
    std::string shown = dir + "/" + rel;
    fs::file_status st = it->symlink_status(ec);
    if (ec) return IoError(shown + ": " + ec.message());
    fs::path source = p;
    if (fs::is_symlink(st)) {
      fs::path target = fs::weakly_canonical(p, ec);
      if (ec || !Inside(root, target)) {
        return InvalidArgument(shown + ": symlink points outside " + dir);
      }
      fs::file_status ts = fs::status(target, ec);
      if (ec) return InvalidArgument(shown + ": dangling symlink");
      if (fs::is_directory(ts)) {
        return InvalidArgument(shown + ": symlinks to directories are not supported");
      }
      st = ts;
      source = target;
    }
    if (fs::is_directory(st)) continue;
    if (!skipped.empty() && p == skipped) continue;  // the archive being written
    if (!fs::is_regular_file(st)) {
      return InvalidArgument(shown + ": " + TypeName(st.type()) + "; only files can be packed");
    }
    if (rel == "MANIFEST") continue;
    if (rel == "LINKS") {
      return InvalidArgument(shown + ": LINKS cannot be packed; it is written by carton shrink");
    }
    if (auto reserved = ReservedTopLevelName(rel)) {
      return InvalidArgument(shown + ": top-level name \"" + rel.substr(0, rel.find('/')) +
                             "\" collides with " + std::string(*reserved) +
                             " (pack writes MANIFEST and shrink writes LINKS; both names are "
                             "reserved in any letter case)");
    }
    Status valid = manifest::ValidateEntryPath(rel);
    if (!valid.ok()) return InvalidArgument(dir + ": " + valid.message());
    std::uint64_t size = fs::file_size(source, ec);
    if (ec) return IoError(shown + ": " + ec.message());
    files.push_back({rel, source.string(), size});
  }
  std::sort(files.begin(), files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  // Readers refuse names that collide on a case-insensitive file system
  // (carton/FORMAT.md), so such a directory cannot be packed.
  std::map<std::string, std::string> folded;
  for (const SourceFile& f : files) {
    std::string key = f.path;
    for (char& c : key) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    auto [it, fresh] = folded.emplace(key, f.path);
    if (!fresh) {
      return InvalidArgument(dir + ": \"" + it->second + "\" and \"" + f.path +
                             "\" differ only in letter case; a carton must unpack the same "
                             "on every file system");
    }
  }
  for (const auto& [key, path] : folded) {
    for (std::size_t slash = key.find('/'); slash != std::string::npos;
         slash = key.find('/', slash + 1)) {
      auto it = folded.find(key.substr(0, slash));
      if (it != folded.end()) {
        return InvalidArgument(dir + ": \"" + path + "\" is inside \"" + it->second +
                               "\", a file, on a case-insensitive file system");
      }
    }
  }
  return files;
}

}  // namespace carton::internal

#include "pack_walk.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include "carton/manifest/manifest.h"

namespace carton::internal {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIgnoreFile = ".cartonignore";

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

// One exclusion glob, as written in .cartonignore or --exclude (pack.h).
struct Glob {
  std::string pattern;
  bool dirs_only = false;   // written with a trailing '/'
  bool whole_path = false;  // holds a '/': matched against the path from PATH
  bool by_default = false;

  bool Matches(const std::string& rel, bool is_dir) const {
    if (dirs_only && !is_dir) return false;
    if (whole_path) return ::fnmatch(pattern.c_str(), rel.c_str(), FNM_PATHNAME) == 0;
    const std::size_t slash = rel.rfind('/');
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  }
};

Result<Glob> MakeGlob(std::string_view text, bool by_default, const std::string& origin) {
  Glob g;
  g.by_default = by_default;
  std::string p(text);
  while (p.size() > 1 && p.back() == '/') {
    g.dirs_only = true;
    p.pop_back();
  }
  if (!p.empty() && p.front() == '/') {
    g.whole_path = true;
    p.erase(0, 1);
  }
  if (p.empty() || p == "/") {
    return InvalidArgument(origin + ": \"" + std::string(text) + "\" is not a usable glob");
  }
  if (p.find('/') != std::string::npos) g.whole_path = true;
  g.pattern = std::move(p);
  return g;
}

// The default exclusions, then .cartonignore's lines, then `extra`.
Result<std::vector<Glob>> LoadGlobs(const fs::path& root, const std::string& shown,
                                    const std::vector<std::string>& extra) {
  std::vector<Glob> globs;
  for (std::string_view d : {".git/", "__pycache__/", ".DS_Store"}) {
    CARTON_ASSIGN_OR_RETURN(Glob g, MakeGlob(d, true, "default"));
    globs.push_back(std::move(g));
  }
  const fs::path ignore = root / kIgnoreFile;
  std::error_code ec;
  if (fs::is_regular_file(ignore, ec)) {
    std::ifstream in(ignore);
    if (!in) return IoError(shown + "/" + std::string(kIgnoreFile) + ": cannot read");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.pop_back();
      std::size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') continue;
      CARTON_ASSIGN_OR_RETURN(
          Glob g, MakeGlob(std::string_view(line).substr(start), false,
                           shown + "/" + std::string(kIgnoreFile) + ":" + std::to_string(n)));
      globs.push_back(std::move(g));
    }
  }
  for (const std::string& e : extra) {
    CARTON_ASSIGN_OR_RETURN(Glob g, MakeGlob(e, false, "--exclude"));
    globs.push_back(std::move(g));
  }
  return globs;
}

const Glob* Excluding(const std::vector<Glob>& globs, const std::string& rel, bool is_dir) {
  for (const Glob& g : globs) {
    if (g.Matches(rel, is_dir)) return &g;
  }
  return nullptr;
}

// Readers refuse names that collide on a case-insensitive file system
// (carton/FORMAT.md), so such a folder cannot be packed.
Status CheckLetterCase(const std::vector<SourceFile>& files, const std::string& shown) {
  std::map<std::string, std::string> folded;
  for (const SourceFile& f : files) {
    std::string key = f.path;
    for (char& c : key) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    auto [it, fresh] = folded.emplace(key, f.path);
    if (!fresh) {
      return Unsupported(shown + ": \"" + it->second + "\" and \"" + f.path +
                         "\" differ only in letter case; a carton must unpack the same "
                         "on every file system");
    }
  }
  for (const auto& [key, path] : folded) {
    for (std::size_t slash = key.find('/'); slash != std::string::npos;
         slash = key.find('/', slash + 1)) {
      auto it = folded.find(key.substr(0, slash));
      if (it != folded.end()) {
        return Unsupported(shown + ": \"" + path + "\" is inside \"" + it->second +
                           "\", a file, on a case-insensitive file system");
      }
    }
  }
  return Status::Ok();
}

Result<WalkResult> WalkFile(const fs::path& file, const std::string& shown) {
  WalkResult out;
  std::string name = "model/" + file.filename().string();
  Status valid = manifest::ValidateEntryPath(name);
  if (!valid.ok()) return Unsupported(shown + ": " + valid.message());
  std::error_code ec;
  std::uint64_t size = fs::file_size(file, ec);
  if (ec) return IoError(shown + ": " + ec.message());
  out.files.push_back({std::move(name), file.string(), size});
  out.single_file = true;
  return out;
}

// What the walk of a folder needs to decide on each of its entries.
struct FolderWalk {
  fs::path root;
  std::string shown;           // the folder as the user gave it
  fs::path skipped;            // the archive being written, when known
  std::vector<Glob> globs;     // exclusions
  bool carton_layout = false;  // the folder has a model/ directory
};

// The file symlink `p` points to (packed as that file). `target_status` and
// `status_ec` are what following the link gave.
Result<fs::path> FollowSymlink(const fs::path& p, const fs::file_status& target_status,
                               const std::error_code& status_ec, const std::string& where) {
  if (status_ec || !fs::exists(target_status)) {
    return Unsupported(where + ": dangling symlink");
  }
  if (fs::is_directory(target_status)) {
    return Unsupported(where + ": symlinks to directories are not supported");
  }
  std::error_code ec;
  fs::path target = fs::canonical(p, ec);
  if (ec) return IoError(where + ": " + ec.message());
  return target;
}

// In the carton layout, the top-level names pack and shrink write are
// refused (MANIFEST itself is skipped before this).
Status CheckReservedName(const std::string& rel, const std::string& where) {
  if (rel == "LINKS") {
    return Unsupported(where + ": LINKS cannot be packed; it is written by carton shrink");
  }
  if (auto reserved = ReservedTopLevelName(rel)) {
    return Unsupported(where + ": top-level name \"" + rel.substr(0, rel.find('/')) +
                       "\" collides with " + std::string(*reserved) +
                       " (pack writes MANIFEST and shrink writes LINKS; both names are "
                       "reserved in any letter case)");
  }
  return Status::Ok();
}

// Adds the iterator's entry to `out` when it is a file to pack; skips it
// when excluded (not descending into an excluded directory), a directory,
// or the archive being written.
Status AddEntry(const FolderWalk& w, fs::recursive_directory_iterator& it, WalkResult& out) {
  std::error_code ec;
  const fs::path& p = it->path();
  std::string rel = p.lexically_relative(w.root).generic_string();
  std::string where = w.shown + "/" + rel;
  fs::file_status st = it->symlink_status(ec);
  if (ec) return IoError(where + ": " + ec.message());
  if (rel == kIgnoreFile && fs::is_regular_file(st)) return Status::Ok();
  fs::path source = p;
  fs::file_status target_status = st;
  if (fs::is_symlink(st)) target_status = fs::status(p, ec);
  if (const Glob* g = Excluding(w.globs, rel, fs::is_directory(target_status))) {
    if (fs::is_directory(st)) it.disable_recursion_pending();
    if (g->by_default) {
      out.skipped_by_default.push_back(rel + (fs::is_directory(target_status) ? "/" : ""));
    }
    return Status::Ok();
  }
  if (fs::is_symlink(st)) {
    // Inside the folder or out of it, a link is packed as the file it
    // points to.
    CARTON_ASSIGN_OR_RETURN(source, FollowSymlink(p, target_status, ec, where));
    st = target_status;
  }
  if (fs::is_directory(st)) return Status::Ok();
  if (!w.skipped.empty() && p == w.skipped) return Status::Ok();  // the archive being written
  if (!fs::is_regular_file(st)) {
    return Unsupported(where + ": " + TypeName(st.type()) + "; only files can be packed");
  }
  if (w.carton_layout) {
    if (rel == "MANIFEST") return Status::Ok();
    CARTON_RETURN_IF_ERROR(CheckReservedName(rel, where));
  }
  // Without model/, the files are the model's: carton.toml, tensor_data/
  // and misc/ aside, which are the carton's.
  const bool carton_file =
      rel == "carton.toml" || rel.starts_with("tensor_data/") || rel.starts_with("misc/");
  std::string name = w.carton_layout || carton_file ? rel : "model/" + rel;
  Status valid = manifest::ValidateEntryPath(name);
  if (!valid.ok()) return Unsupported(w.shown + ": " + valid.message());
  std::uint64_t size = fs::file_size(source, ec);
  if (ec) return IoError(where + ": " + ec.message());
  out.files.push_back({std::move(name), source.string(), size});
  return Status::Ok();
}

}  // namespace

Result<WalkResult> WalkModelPath(const std::string& path, const WalkOptions& options) {
  const std::string& shown = path;
  std::error_code ec;
  fs::path root = fs::canonical(path, ec);
  if (ec) return NotFound(shown + ": " + ec.message());
  fs::file_status root_status = fs::status(root, ec);
  if (ec) return IoError(shown + ": " + ec.message());
  if (fs::is_regular_file(root_status)) return WalkFile(root, shown);
  if (!fs::is_directory(root_status)) {
    return Unsupported(shown + ": " + TypeName(root_status.type()) +
                       "; pack takes a folder or a file");
  }
  FolderWalk w;
  w.root = root;
  w.shown = shown;
  if (!options.skip.empty()) w.skipped = fs::weakly_canonical(options.skip, ec);
  if (ec) w.skipped.clear();
  CARTON_ASSIGN_OR_RETURN(w.globs, LoadGlobs(root, shown, options.exclude));

  WalkResult out;
  out.has_config = fs::is_regular_file(root / "carton.toml", ec);
  w.carton_layout = fs::is_directory(root / "model", ec);

  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return IoError(shown + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return IoError(shown + ": " + ec.message());
    CARTON_RETURN_IF_ERROR(AddEntry(w, it, out));
  }
  std::sort(out.files.begin(), out.files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  std::sort(out.skipped_by_default.begin(), out.skipped_by_default.end());
  CARTON_RETURN_IF_ERROR(CheckLetterCase(out.files, shown));
  return out;
}

}  // namespace carton::internal

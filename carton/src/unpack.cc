#include "carton/carton/unpack.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <system_error>

#include "carton/carton/reader.h"
#include "carton/carton/symlink.h"
#include "carton/common/atomic_file.h"
#include "carton/common/mapped_file.h"
#include "carton/common/temporaries.h"
#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/reader.h"
#include "signature_files.h"

namespace carton {
namespace {

namespace fs = std::filesystem;

// A directory tree, registered as a temporary (an interrupt removes it),
// removed unless released.
class TempTree {
 public:
  explicit TempTree(fs::path p) : path_(std::move(p)) {}
  ~TempTree() {
    if (registration_.registered()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  // Creates the directory. Errors: kIoError.
  // Errors name `shown`, the directory the user asked for.
  Status Create(const std::string& shown) {
    std::error_code ec;
    registration_ = TemporaryPath::Create(path_.string(), TemporaryKind::kDirectory,
                                          [&] { return fs::create_directory(path_, ec); });
    if (!registration_.registered()) {
      return IoError(shown + ": cannot create the directory: " +
                     (ec ? ec.message() : "a temporary directory beside it exists"));
    }
    return Status::Ok();
  }
  void Release() { registration_.Release(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  TemporaryPath registration_;
};

// Copies a cached blob to `root`/`path`, hashing it again on the way: the
// cache's copy was verified when it was fetched, but disks fail.
Status CopyLinked(const LinkedFile& f, const std::string& blob, const fs::path& root,
                  const std::function<void(std::uint64_t)>& on_bytes) {
  fs::path out = root / fs::path(f.path);
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  if (ec) return IoError(out.parent_path().string() + ": " + ec.message());
  CARTON_ASSIGN_OR_RETURN(MappedFile in, MappedFile::Open(blob));
  CARTON_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(out.string()));
  manifest::Sha256 h;
  CARTON_RETURN_IF_ERROR(ForEachMappedStep(in.bytes(), [&](ByteView step) {
    h.Update(step);
    on_bytes(step.size());
    return file.Write(step);
  }));
  CARTON_RETURN_IF_ERROR(
      manifest::CheckDigest(f.path + ": the cached copy " + blob, h.Finish(), f.sha256));
  return file.Commit();
}

// Extracts file entry `name` (or MANIFEST) to `root`/`name`, checking it
// against MANIFEST as it is written.
Status ExtractOne(const CartonReader& reader, const std::string& name, const fs::path& root,
                  const std::function<void(std::uint64_t)>& on_bytes) {
  fs::path out = root / fs::path(name);
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  if (ec) return IoError(out.parent_path().string() + ": " + ec.message());
  return reader.ExtractTo(name, out.string(), on_bytes);
}

// A symlink entry becomes a relative symlink in the unpacked tree
// (FORMAT.md, "Symlink entries"): the resolved target rewritten relative to
// the link, never the entry's raw text. No file is written through it: the
// zip reader refuses file entries below a non-directory entry.
Status MakeSymlink(const ZipReader& zip, const ZipEntry& e, const fs::path& root,
                   const manifest::Manifest& m) {
  CARTON_ASSIGN_OR_RETURN(std::string target, ResolveSymlinkEntry(zip, e, &m));
  fs::path out = root / fs::path(e.name);
  std::error_code ec;
  fs::create_directories(out.parent_path(), ec);
  if (ec) return IoError(out.parent_path().string() + ": " + ec.message());
  fs::create_symlink(SymlinkPathOnDisk(e.name, target), out, ec);
  if (ec) return IoError(out.string() + ": cannot create the symlink: " + ec.message());
  return Status::Ok();
}

fs::path ParentOf(const std::string& dir) {
  const fs::path target(dir);
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

// The checks on the output that need nothing of the carton: `dir` is new or
// an empty directory, and its parent is a directory.
Status CheckUnpackDir(const std::string& dir) {
  std::error_code ec;
  const fs::path target(dir);
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec) || !fs::is_empty(target, ec)) {
      return InvalidArgument(dir + ": exists and is not an empty directory");
    }
    return Status::Ok();
  }
  // Worded as mkdir's errors would be, which is what the same mistake gives
  // when found later.
  const fs::path parent = ParentOf(dir);
  if (!fs::exists(parent, ec)) {
    return NotFound(dir + ": cannot create the directory: No such file or directory");
  }
  if (!fs::is_directory(parent, ec)) {
    return IoError(dir + ": cannot create the directory: Not a directory");
  }
  return Status::Ok();
}

// ./<model_name> when carton.toml names a plain one, else ./<the carton's
// file name without extension>.
Result<std::string> DefaultDir(const CartonReader& reader, const std::string& carton_path,
                               const CartonLimits& limits) {
  auto plain = [](const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
           s.find('\0') == std::string::npos && s[0] != '.';
  };
  auto text = reader.ReadText("carton.toml", limits.config.max_size);
  if (text.ok()) {
    auto config = ParseConfig(*text, "carton.toml", limits.config);
    if (config.ok() && config->model_name && plain(*config->model_name)) {
      return *config->model_name;
    }
  }
  std::string base = carton_path.substr(0, carton_path.find_first_of("?#"));
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string stem = fs::path(base).stem().string();
  if (plain(stem)) return stem;
  return InvalidArgument(carton_path + ": no model name to unpack into; give DIR");
}

// Refuses up front rather than fill the disk and fail halfway. Linked
// files are not counted: LINKS gives no sizes.
Status CheckFreeSpace(const ZipReader& zip, const fs::path& abs_parent, const std::string& dir) {
  std::uint64_t total = 0;
  for (const auto& e : zip.entries()) {
    if (!CheckedAdd(total, e.size, &total)) total = ~std::uint64_t{0};
  }
  std::error_code ec;
  fs::space_info space = fs::space(abs_parent, ec);
  if (!ec && total > space.available) {
    return IoError(dir + ": the carton's files take " + std::to_string(total) +
                   " bytes, but only " + std::to_string(space.available) + " are free there");
  }
  return Status::Ok();
}

// The bytes of the zip's file entries that Unpack writes (progress total
// before linked files are found).
std::uint64_t ExtractedBytes(const ZipReader& zip) {
  std::uint64_t total = 0;
  for (const auto& e : zip.entries()) {
    if (!e.is_dir && !e.is_symlink && e.name != "LINKS") total += e.size;
  }
  return total;
}

// Writes every file and symlink entry of the zip below `root`.
Status ExtractEntries(const CartonReader& reader, const fs::path& root,
                      const std::function<void(std::uint64_t)>& on_bytes) {
  const ZipReader& zip = reader.zip();
  for (const auto& e : zip.entries()) {
    // LINKS is resolved here; the unpacked tree holds the files themselves.
    if (e.is_dir || e.name == "LINKS") continue;
    Status s = e.is_symlink ? MakeSymlink(zip, e, root, reader.manifest())
                            : ExtractOne(reader, e.name, root, on_bytes);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// Copies linked file `f` from the blob cache below `root`, fetching it again
// when the cached copy went bad. Adds its size to the progress `total` once
// known, and rewinds `done` when the copy starts over.
Status UnpackLinkedFile(const LinkedFile& f, const Environment& env, const fs::path& root,
                        std::uint64_t& total, std::uint64_t& done,
                        const std::function<void(std::uint64_t)>& on_bytes) {
  auto blob = ResolveLinkedFile(f, env, /*rehash=*/false);
  if (!blob.ok()) return blob.status().WithContext(f.path);
  std::error_code size_ec;
  const std::uint64_t size = fs::file_size(*blob, size_ec);
  if (!size_ec) total += size;
  const std::uint64_t before = done;
  Status s = CopyLinked(f, *blob, root, on_bytes);
  if (s.code() == StatusCode::kCorrupt) {
    done = before;
    // The cached copy went bad on disk: rehashing discards it; fetch again.
    blob = ResolveLinkedFile(f, env, /*rehash=*/true);
    if (!blob.ok()) return blob.status().WithContext(f.path);
    s = CopyLinked(f, *blob, root, on_bytes);
  }
  return s;
}

}  // namespace

Result<std::string> Unpack(CartonSource& carton, const std::string& dir_arg,
                           const UnpackOptions& unpack) {
  const std::string& carton_path = carton.location().text();
  const CartonLimits& limits = carton.options().limits;
  std::error_code ec;
  if (!dir_arg.empty()) CARTON_RETURN_IF_ERROR(CheckUnpackDir(dir_arg));
  CARTON_ASSIGN_OR_RETURN(CartonReader * opened, carton.Reader(ReadScope::kWhole));
  CartonReader& reader = *opened;
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ZipReader& zip = reader.zip();
  std::string dir = dir_arg;
  if (dir.empty()) {
    CARTON_ASSIGN_OR_RETURN(dir, DefaultDir(reader, carton_path, limits));
    CARTON_RETURN_IF_ERROR(CheckUnpackDir(dir));
  }
  const fs::path target(dir);
  const fs::path parent = ParentOf(dir);

  fs::path abs_parent = fs::absolute(parent, ec);
  if (unpack.check_free_space) CARTON_RETURN_IF_ERROR(CheckFreeSpace(zip, abs_parent, dir));
  std::random_device rd;
  TempTree temp(abs_parent /
                ("." + target.filename().string() + ".unpack-" + std::to_string(rd())));
  // The temporary directory is an implementation detail: errors name `dir`.
  CARTON_RETURN_IF_ERROR(temp.Create(dir));
  std::uint64_t total = ExtractedBytes(zip), done = 0;
  const std::function<void(std::uint64_t)> on_bytes = [&](std::uint64_t n) {
    done += n;
    if (unpack.progress) unpack.progress(done, total);
  };
  Status extracted = ExtractEntries(reader, temp.path(), on_bytes);
  if (!extracted.ok()) return extracted.WithContext(carton_path);
  for (const LinkedFile& f : reader.linked_files()) {
    Status s = UnpackLinkedFile(f, carton.environment(), temp.path(), total, done, on_bytes);
    if (!s.ok()) return s.WithContext(carton_path);
  }
  // The signature kept with the carton stays with it, as DIR/model.sig.
  CARTON_RETURN_IF_ERROR(internal::PlaceSignature(carton, reader.manifest(), temp.path()));
  // An empty target directory is replaced; rename() does that atomically.
  fs::rename(temp.path(), target, ec);
  if (ec) return IoError(dir + ": cannot move the unpacked files into place: " + ec.message());
  temp.Release();
  return dir;
}

}  // namespace carton

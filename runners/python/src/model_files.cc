#include "model_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "carton/common/atomic_file.h"
#include "carton/common/posix_error.h"
#include "carton/manifest/sha256.h"

namespace carton::python_runner {
namespace {

namespace fs = std::filesystem;

constexpr char kModelPrefix[] = "model/";

Status FsError(const fs::path& path, const std::error_code& ec) {
  return IoError(path.string() + ": " + ec.message());
}

// Mirrors the folder `from` into `to` (which exists): a symbolic link for
// each entry, except folders holding a missing file (`rel` is the path of
// `from` below model/), which are mirrored in turn.
Status Mirror(const fs::path& from, const fs::path& to, const std::string& rel,
              const std::map<std::string, ByteView>& missing) {
  std::error_code ec;
  for (fs::directory_iterator it(from, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string path = rel.empty() ? name : rel + "/" + name;
    auto below = missing.lower_bound(path + "/");
    const bool holds_missing = below != missing.end() && below->first.rfind(path + "/", 0) == 0;
    if (holds_missing && it->is_directory(ec)) {
      fs::create_directory(to / name, ec);
      if (ec) return FsError(to / name, ec);
      CARTON_RETURN_IF_ERROR(Mirror(it->path(), to / name, path, missing));
    } else {
      fs::create_symlink(it->path(), to / name, ec);
      if (ec) return FsError(to / name, ec);
    }
  }
  if (ec) return FsError(from, ec);
  return Status::Ok();
}

}  // namespace

Result<std::string> PythonModelDir(const std::string& model_dir, const loader::LoadedCarton* carton,
                                   const std::string& cache_root) {
  if (carton == nullptr) return model_dir;
  std::map<std::string, ByteView> missing;  // path below model/ -> bytes
  for (const loader::ModelSafetensors& m : carton->model_safetensors()) {
    if (m.path.rfind(kModelPrefix, 0) != 0 || m.file == nullptr) continue;
    const std::string rel = m.path.substr(sizeof(kModelPrefix) - 1);
    struct stat st {};
    if (::stat((model_dir + "/" + rel).c_str(), &st) == 0) continue;
    missing[rel] = m.file->bytes();
  }
  if (missing.empty()) return model_dir;
  if (cache_root.empty()) {
    return NotFound(model_dir +
                    ": model files are missing and there is no cache directory "
                    "($CARTON_CACHE_DIR, $XDG_CACHE_HOME, $HOME) to complete them in");
  }
  if (!carton->manifest_hash()) {
    return Internal(model_dir + ": model files are missing from a carton without a MANIFEST");
  }
  const fs::path target =
      fs::path(cache_root) / "python" / "models" / manifest::ToHex(*carton->manifest_hash());
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return target.string();

  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return FsError(target.parent_path(), ec);
  std::string pattern =
      (target.parent_path() / (".mirror-" + target.filename().string() + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoIoError(errno, pattern);
  }
  const fs::path tmp = pattern;
  Status s = Mirror(model_dir, tmp, "", missing);
  for (auto it = missing.begin(); s.ok() && it != missing.end(); ++it) {
    const fs::path dest = tmp / it->first;
    fs::create_directories(dest.parent_path(), ec);
    s = ec ? FsError(dest.parent_path(), ec) : WriteFileAtomically(dest.string(), it->second);
  }
  if (s.ok()) {
    ::chmod(tmp.c_str(), 0755);  // mkdtemp made it 0700
    if (::rename(tmp.c_str(), target.c_str()) == 0) return target.string();
    if (errno != EEXIST && errno != ENOTEMPTY) {
      s = ErrnoIoError(errno, "renaming " + tmp.string() + " to " + target.string());
    }
  }
  fs::remove_all(tmp, ec);  // ours failed, or another process's won
  if (!s.ok()) return s;
  return target.string();
}

}  // namespace carton::python_runner

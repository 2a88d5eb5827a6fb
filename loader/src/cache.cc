#include "carton/loader/cache.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "cache_internal.h"
#include "carton/carton/reader.h"
#include "carton/common/atomic_file.h"
#include "carton/common/mapped_file.h"
#include "carton/common/temporaries.h"
#include "carton/format/config.h"
#include "carton/links/blob_cache.h"
#include "carton/links/cache_layout.h"
#include "carton/manifest/hash_files.h"
#include "carton/manifest/manifest.h"

namespace carton::loader {
namespace internal {
namespace {

namespace fs = std::filesystem;

std::string RandomSuffix() {
  std::random_device rd;
  return std::to_string(::getpid()) + "-" + std::to_string(rd());
}

// Runs `step` under the lock of the registry of temporaries
// (temporaries.h), through a TemporaryPath::Create that registers nothing.
// An interrupt's cleanup takes that lock and exits holding it, so no step
// runs beside the cleanup or after it.
void UnderTemporariesLock(const std::function<void()>& step) {
  (void)TemporaryPath::Create({}, TemporaryKind::kFile, [&] {
    step();
    return false;
  });
}

// Deletes the tree at `path` one name at a time, each under the registry's
// lock: when an interrupt's cleanup deletes the tree (it is registered),
// it does so alone (two deleting one tree at once could each give up at a
// name the other removed, and leave the rest).
void RemoveTree(const fs::path& path) {
  std::vector<std::pair<fs::path, bool>> children;  // path, is a directory
  std::error_code ec;
  for (fs::directory_iterator it(path, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::error_code type_ec;
    children.emplace_back(it->path(),
                          it->symlink_status(type_ec).type() == fs::file_type::directory);
  }
  for (const auto& [child, directory] : children) {
    if (directory) {
      RemoveTree(child);
    } else {
      UnderTemporariesLock([&] { ::unlink(child.c_str()); });
    }
  }
  UnderTemporariesLock([&] { ::rmdir(path.c_str()); });
}

// Moves `dir` out of the way (so no load finds it any more) and deletes it.
// The trash directory is registered as a temporary from the moment the
// rename makes it (under the registry's lock) until it is gone, so an
// interrupt leaves either the entry or nothing.
Status Discard(const std::string& root, const std::string& dir, const std::string& hex) {
  std::error_code ec;
  const std::string trash = links::CacheLayout(root).CartonsDir() + "/" +
                            std::string(links::kEntryTrashPrefix) + hex + "-" + RandomSuffix();
  const TemporaryPath registration = TemporaryPath::Create(trash, TemporaryKind::kDirectory, [&] {
    fs::rename(dir, trash, ec);
    return !ec;
  });
  if (ec) return IoError(dir + ": cannot remove the cache entry: " + ec.message());
  RemoveTree(trash);
  return Status::Ok();
}

// Quick (or full) check of an existing entry; OK or why it cannot be used.
Result<EntryRecord> CheckEntry(const std::string& dir, const manifest::Digest& hash, bool full) {
  auto rec = ReadEntryRecord(dir);
  if (!rec.ok()) {
    return Corrupt("cache entry " + dir + ": " + rec.status().message());
  }
  if (rec->manifest_hash != hash) {
    return Corrupt("cache entry " + dir + ": record names manifest hash " +
                   manifest::ToHex(rec->manifest_hash));
  }
  CARTON_RETURN_IF_ERROR(QuickCheck(dir, *rec));
  if (full) {
    CARTON_ASSIGN_OR_RETURN(auto problems, VerifyEntryDir(dir, hash, 0));
    if (!problems.empty()) return Corrupt("cache entry " + dir + ": " + problems.front());
  }
  return rec;
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

namespace {

// A pid written in a temporary's name ("<pid>-..."), or 0.
pid_t PidIn(std::string_view text) {
  long pid = 0;
  std::size_t i = 0;
  for (; i < text.size() && i < 10 && text[i] >= '0' && text[i] <= '9'; ++i) {
    pid = pid * 10 + (text[i] - '0');
  }
  return i > 0 && i < text.size() && text[i] == '-' ? static_cast<pid_t>(pid) : 0;
}

// ".tmp-<hash>-..." in cartons/ (an entry being made, under the hash's
// lock) and ".trash-<hash>-<pid>-..." (an entry being removed by <pid>).
std::optional<CacheTemporary> EntryTemporary(const fs::path& path) {
  const std::string name = path.filename().string();
  for (std::string_view prefix : {links::kEntryTempPrefix, links::kEntryTrashPrefix}) {
    if (!name.starts_with(prefix) || name.size() < prefix.size() + 65 ||
        !manifest::ParseHex(name.substr(prefix.size(), 64))) {
      continue;
    }
    CacheTemporary t;
    t.path = path;
    t.directory = true;
    if (prefix == links::kEntryTempPrefix) {
      t.hex = name.substr(prefix.size(), 64);
    } else {
      t.pid = PidIn(std::string_view(name).substr(prefix.size() + 65));
    }
    return t;
  }
  return std::nullopt;
}

// A file in downloads/, and its temporaries, with the owner its name gives
// (links::CacheLayout::ParseDownloadName).
std::optional<CacheTemporary> DownloadTemporary(const fs::path& path) {
  auto name = links::CacheLayout::ParseDownloadName(path.filename().string());
  if (!name) return std::nullopt;
  CacheTemporary t;
  t.path = path;
  t.hex = name->hex;
  t.pid = name->pid;
  t.resumable = name->resumable;
  return t;
}

}  // namespace

std::vector<CacheTemporary> ListCacheTemporaries(const links::CacheLayout& layout) {
  std::vector<CacheTemporary> out;
  std::error_code ec;
  for (fs::directory_iterator it(layout.CartonsDir(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (auto t = EntryTemporary(it->path())) out.push_back(std::move(*t));
  }
  ec.clear();
  for (fs::directory_iterator it(layout.DownloadsDir(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (auto t = DownloadTemporary(it->path())) out.push_back(std::move(*t));
  }
  return out;
}

bool OwnerGone(const links::CacheLayout& layout, const CacheTemporary& t, FileLock* lock) {
  if (!t.hex.empty()) {
    auto opened = FileLock::Open(layout.CartonLockPath(t.hex));
    if (!opened.ok()) return false;
    *lock = std::move(opened).value();
    auto got = lock->Lock(FileLock::Mode::kExclusive, /*wait=*/false);
    return got.ok() && *got;
  }
  // No owner named (a trash directory of an older version): anyone's.
  return t.pid <= 0 || (::kill(t.pid, 0) != 0 && errno == ESRCH);
}

namespace {

// Removes the temporaries of hash `hex` but a URL's resumable download:
// they belong to loads that died (the caller holds the lock they would
// hold).
void RemoveDeadTemporaries(const links::CacheLayout& layout, const std::string& hex) {
  for (const CacheTemporary& t : ListCacheTemporaries(layout)) {
    if (t.hex != hex || t.resumable) continue;
    std::error_code ec;
    if (t.directory) {
      fs::remove_all(t.path, ec);
    } else {
      fs::remove(t.path, ec);
    }
  }
}

// The whole archive, checked (CartonReader::Check), its MANIFEST the one
// the lookup named the entry by: a download or pull that brought another
// carton is refused. REQUIRES: the hash's materialize lock is held.
Result<const CartonReader*> WholeCarton(CartonSource& source, const std::string& hex) {
  CARTON_ASSIGN_OR_RETURN(CartonReader * whole, source.Reader(ReadScope::kWholeUnderCartonLock));
  CARTON_RETURN_IF_ERROR(whole->Check());
  if (const std::string got = manifest::ToHex(whole->manifest_file().hash); got != hex) {
    return Corrupt(source.location().text() + ": MANIFEST hashes to " + got +
                   ", but the carton was looked up as " + hex + " (it changed while it was read)");
  }
  return whole;
}

// Makes the entry `dir` of hash `hex` from the whole carton: materialized
// into a registered temporary directory beside it, renamed into place.
// Returns its record.
Result<EntryRecord> MakeEntry(const links::CacheLayout& layout, const std::string& hex,
                              const std::string& dir, CartonSource& source,
                              const LoadOptions& options, LoadStats* stats) {
  CARTON_ASSIGN_OR_RETURN(const CartonReader* whole, WholeCarton(source, hex));
  const std::string tmp =
      layout.CartonsDir() + "/" + std::string(links::kEntryTempPrefix) + hex + "-" + RandomSuffix();
  std::error_code ec;
  // Registered while it exists: an interrupted load removes it.
  const TemporaryPath registration = TemporaryPath::Create(
      tmp, TemporaryKind::kDirectory, [&] { return fs::create_directories(tmp, ec); });
  if (!registration.registered()) {
    return IoError(tmp + ": cannot create: " + (ec ? ec.message() : "exists"));
  }
  MaterializeSource src;
  src.reader = whole;
  src.file = source.file().get();
  src.environment = &source.environment();
  src.cache_root = layout.root();
  src.progress = options.progress;
  auto rec = Materialize(src, tmp, stats);
  if (rec.ok()) {
    Status s = WriteEntryRecord(tmp, *rec);
    if (!s.ok()) rec = s;
  }
  if (!rec.ok()) {
    RemoveTree(tmp);
    return rec.status();
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    Status s = IoError(dir + ": cannot move the new cache entry into place: " + ec.message());
    RemoveTree(tmp);
    return s;
  }
  return rec;
}

}  // namespace

Result<AcquiredEntry> AcquireEntry(const std::string& root, CartonSource& source,
                                   const manifest::Digest& hash, const LoadOptions& options,
                                   LoadStats* stats) {
  const links::CacheLayout layout(root);
  const std::string hex = manifest::ToHex(hash);
  const std::string dir = layout.CartonEntryDir(hex);
  CARTON_ASSIGN_OR_RETURN(FileLock use, FileLock::Open(layout.CartonUseLockPath(hex)));
  CARTON_ASSIGN_OR_RETURN(bool locked, use.Lock(FileLock::Mode::kShared));
  (void)locked;
  // A whole entry is a hit. Holding the use lock keeps gc from removing it
  // under us.
  auto hit = [&]() -> std::optional<AcquiredEntry> {
    if (!Exists(dir)) return std::nullopt;
    auto rec = CheckEntry(dir, hash, options.verify_cache_hit);
    if (!rec.ok()) return std::nullopt;
    TouchEntry(dir);
    return AcquiredEntry{dir, std::move(rec).value(), std::move(use), true};
  };
  if (auto entry = hit()) return std::move(*entry);

  // A miss: under the materialize lock, so that other processes loading
  // the same carton wait for this entry instead of making it too.
  CARTON_ASSIGN_OR_RETURN(FileLock own, FileLock::Open(layout.CartonLockPath(hex)));
  CARTON_ASSIGN_OR_RETURN(locked, own.Lock(FileLock::Mode::kExclusive));
  // Someone may have made (or repaired) it while we waited.
  if (auto entry = hit()) return std::move(*entry);
  if (Exists(dir)) CARTON_RETURN_IF_ERROR(Discard(root, dir, hex));
  RemoveDeadTemporaries(layout, hex);
  CARTON_ASSIGN_OR_RETURN(EntryRecord rec, MakeEntry(layout, hex, dir, source, options, stats));
  return AcquiredEntry{dir, std::move(rec), std::move(use), false};
}

namespace {

// One run of VerifyEntryDir: the entry's MANIFEST, its files (those mapped
// from the source .carton hashed there), and the problems found.
class EntryVerifier {
 public:
  EntryVerifier(const std::string& dir, const ProgressFn& progress)
      : dir_(dir), progress_(progress) {}

  // MANIFEST: read, named by its hash, parsed. False when it cannot be.
  bool ReadManifest(const manifest::Digest& hash) {
    auto bytes = ReadFile(dir_ + "/MANIFEST");
    if (!bytes.ok()) {
      problems.push_back("MANIFEST: " + bytes.status().message());
      return false;
    }
    const manifest::Digest got = manifest::Sha256Of(*bytes);
    if (got != hash) {
      problems.push_back("MANIFEST: sha256 " + manifest::ToHex(got) + " is not the entry's name");
    }
    auto m = manifest::Manifest::Parse(*bytes);
    if (!m.ok()) {
      problems.push_back(m.status().message());
      return false;
    }
    manifest_ = std::move(m).value();
    return true;
  }

  // The files the entry record says are mapped from the source .carton,
  // and that source.
  void OpenMapped() {
    auto rec = ReadEntryRecord(dir_);
    if (rec.ok()) {
      for (const auto& f : rec->files) {
        if (f.mapped) mapped_[f.path] = {f.data_offset, f.size};
      }
    }
    if (mapped_.empty()) return;
    auto opened = MappedFile::Open(dir_ + "/" + std::string(kSourceName));
    if (!opened.ok()) {
      problems.push_back(std::string(kSourceName) + ": " + opened.status().message());
    } else {
      source_ = std::move(opened).value();
    }
  }

  // Hashes the mapped files in the source (first, against their own total:
  // the other files' sizes are known only once listed) and lists the others.
  void HashMappedListOthers() {
    for (const auto& [path, at] : mapped_) mapped_total_ += at.size;
    for (const auto& me : manifest_.entries()) {
      // A mapped file is hashed in the source, and its copy in the
      // directory (which runners open by name) like any other file.
      if (auto it = mapped_.find(me.path); it != mapped_.end() && source_) {
        HashMapped(me, it->second);
      }
      std::string p = dir_ + "/" + me.path;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) {
        problems.push_back(me.path + ": missing");
        continue;
      }
      paths_.push_back(p);
      listed_.insert(me.path);
    }
  }

  // Hashes the entry's own files on `threads`.
  Status HashOthers(unsigned threads) {
    std::uint64_t total = mapped_total_;
    std::atomic<std::uint64_t> done{mapped_done_};
    for (const auto& p : paths_) {
      std::error_code size_ec;
      const auto size = fs::file_size(p, size_ec);
      if (!size_ec) total += size;
    }
    const auto count = [&](std::uint64_t n) {
      const std::uint64_t now = done += n;
      if (progress_) progress_(now, total);
    };
    CARTON_ASSIGN_OR_RETURN(std::vector<manifest::Digest> digests,
                            manifest::HashFiles(paths_, threads, {}, count));
    std::size_t k = 0;
    for (const auto& me : manifest_.entries()) {
      if (k < paths_.size() && paths_[k] == dir_ + "/" + me.path) {
        if (digests[k] != me.sha256) {
          problems.push_back(me.path + ": " + manifest::DigestMismatch(digests[k], me.sha256));
        }
        ++k;
      }
    }
    return Status::Ok();
  }

  // carton.toml holds to the rules every reader of a carton applies (an
  // entry made by a version that did not check them may break them).
  void CheckConfig() {
    auto text = ReadFile(dir_ + "/carton.toml");
    if (!text.ok()) {
      problems.push_back("carton.toml: " + text.status().message());
      return;
    }
    if (text->size() > kMaxConfigSize) {
      problems.push_back("carton.toml: " + std::to_string(text->size()) +
                         " bytes, over the limit of " + std::to_string(kMaxConfigSize));
      return;
    }
    auto config = ParseConfig(AsChars(*text), "carton.toml");
    if (!config.ok()) problems.push_back(config.status().message());
  }

  // Files in the entry that MANIFEST does not list.
  Status ListExtras() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_directory(ec)) continue;
      std::string rel = fs::relative(it->path(), dir_, ec).generic_string();
      if (!listed_.count(rel)) problems.push_back(rel + ": not listed in MANIFEST");
    }
    if (ec) return IoError(dir_ + ": cannot list: " + ec.message());
    return Status::Ok();
  }

  std::vector<std::string> problems;

 private:
  struct Mapped {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
  };

  void HashMapped(const manifest::ManifestEntry& me, const Mapped& at) {
    if (!InBounds(at.offset, at.size, source_->size())) {
      problems.push_back(me.path + ": outside the source .carton");
      return;
    }
    const manifest::Digest d = manifest::Sha256Of(source_->bytes().subspan(at.offset, at.size));
    mapped_done_ += at.size;
    if (progress_) progress_(mapped_done_, mapped_total_);
    if (d != me.sha256) {
      problems.push_back(me.path +
                         " (in the source .carton): " + manifest::DigestMismatch(d, me.sha256));
    }
  }

  const std::string& dir_;
  const ProgressFn& progress_;
  manifest::Manifest manifest_;
  std::map<std::string, Mapped> mapped_;  // path -> where in the source
  std::optional<MappedFile> source_;
  std::uint64_t mapped_total_ = 0, mapped_done_ = 0;
  std::vector<std::string> paths_;  // the entry's own files to hash
  std::set<std::string> listed_ = {"MANIFEST", std::string(kEntryRecordName),
                                   std::string(kSourceName)};
};

}  // namespace

Result<std::vector<std::string>> VerifyEntryDir(const std::string& dir,
                                                const manifest::Digest& hash, unsigned threads,
                                                const ProgressFn& progress) {
  EntryVerifier v(dir, progress);
  if (!v.ReadManifest(hash)) return std::move(v.problems);
  v.CheckConfig();
  v.OpenMapped();
  v.HashMappedListOthers();
  CARTON_RETURN_IF_ERROR(v.HashOthers(threads));
  CARTON_RETURN_IF_ERROR(v.ListExtras());
  return std::move(v.problems);
}

}  // namespace internal

namespace fs = std::filesystem;

CartonCache::CartonCache(std::string root) : root_(std::move(root)) {}

Result<CartonCache> CartonCache::OpenDefault() {
  CARTON_ASSIGN_OR_RETURN(std::string root, links::DefaultCacheDir());
  return CartonCache(std::move(root));
}

std::string CartonCache::EntryDir(const manifest::Digest& hash) const {
  return links::CacheLayout(root_).CartonEntryDir(manifest::ToHex(hash));
}

namespace {

// What `dir` takes on disk: the blocks of its files (hard links to one
// file counted once; sparse files as what they use), as `du -s -B1` counts.
std::uint64_t DirSize(const fs::path& dir) {
  std::uint64_t total = 0;
  std::set<std::pair<dev_t, ino_t>> seen;
  struct stat top;
  if (::lstat(dir.c_str(), &top) == 0) total += static_cast<std::uint64_t>(top.st_blocks) * 512;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
    total += static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

}  // namespace

Result<std::vector<CacheEntryInfo>> CartonCache::List() const {
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  std::string dir = links::CacheLayout(root_).CartonsDir();
  if (!fs::exists(dir, ec)) return out;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    // An entry removed since the directory was read is skipped.
    std::error_code entry_ec;
    if (!manifest::ParseHex(name) || !it->is_directory(entry_ec)) continue;
    CacheEntryInfo info;
    info.hash = name;
    info.dir = it->path().string();
    auto rec = internal::ReadEntryRecord(info.dir);
    info.size = DirSize(it->path());
    struct stat st;
    std::string record = info.dir + "/" + std::string(internal::kEntryRecordName);
    if (::stat(record.c_str(), &st) == 0) info.last_used = st.st_mtim.tv_sec;
    auto text = ReadFile(info.dir + "/carton.toml");
    if (text.ok()) {
      auto config = ParseConfig(AsChars(*text));
      if (config.ok() && config->model_name) info.model_name = *config->model_name;
    }
    out.push_back(std::move(info));
  }
  if (ec) return IoError(dir + ": cannot list: " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.last_used != b.last_used ? a.last_used > b.last_used : a.hash < b.hash;
  });
  return out;
}

Result<CacheVerifyResult> CartonCache::Verify(const manifest::Digest& hash,
                                              const ProgressFn& progress) const {
  std::string dir = EntryDir(hash);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no such cache entry");
  CacheVerifyResult r;
  r.hash = manifest::ToHex(hash);
  CARTON_ASSIGN_OR_RETURN(r.problems, internal::VerifyEntryDir(dir, hash, 0, progress));
  auto rec = internal::ReadEntryRecord(dir);
  if (!rec.ok())
    r.problems.push_back(std::string(internal::kEntryRecordName) + ": " + rec.status().message());
  return r;
}

Result<BlobUsage> CartonCache::Blobs() const {
  CARTON_ASSIGN_OR_RETURN(auto blobs, links::BlobCache(root_).List());
  BlobUsage u;
  for (const auto& b : blobs) {
    ++u.count;
    u.bytes += b.size;
    if (b.links > 1) u.shared_bytes += b.size;
  }
  return u;
}

Result<std::vector<PartialDownload>> CartonCache::Partials() const {
  CARTON_ASSIGN_OR_RETURN(auto partials, links::BlobCache(root_).ListPartials());
  std::vector<PartialDownload> out;
  for (const auto& p : partials) {
    out.push_back({"blob", manifest::ToHex(p.digest), p.path, p.size, p.last_modified, p.in_use});
  }
  // Cartons loaded by URL: "<manifest hash>.carton.partial" in downloads/.
  constexpr std::string_view kSuffix = ".carton.partial";
  std::error_code ec;
  for (fs::directory_iterator it(links::CacheLayout(root_).DownloadsDir(), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) continue;
    if (!manifest::ParseHex(name.substr(0, 64))) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    bool in_use = false;
    auto lock = FileLock::Open(links::CacheLayout(root_).CartonLockPath(name.substr(0, 64)));
    if (lock.ok()) {
      auto got = lock->Lock(FileLock::Mode::kExclusive, false);
      in_use = got.ok() && !*got;
    }
    out.push_back({"carton", name.substr(0, 64), it->path().string(),
                   static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec, in_use});
  }
  return out;
}

Result<std::vector<TemporaryInfo>> CartonCache::Temporaries() const {
  const links::CacheLayout layout(root_);
  std::vector<TemporaryInfo> out;
  for (const internal::CacheTemporary& t : internal::ListCacheTemporaries(layout)) {
    if (t.resumable) continue;  // Partials() lists it
    struct stat st {};
    if (::lstat(t.path.c_str(), &st) != 0) continue;  // gone meanwhile
    TemporaryInfo info;
    info.path = t.path.string();
    info.size = t.directory ? DirSize(t.path) : static_cast<std::uint64_t>(st.st_size);
    info.last_modified = st.st_mtim.tv_sec;
    FileLock lock;
    info.in_use = !internal::OwnerGone(layout, t, &lock);
    out.push_back(std::move(info));
  }
  CARTON_ASSIGN_OR_RETURN(auto blobs, links::BlobCache(root_).ListTemporaries());
  for (const auto& b : blobs) out.push_back({b.path, b.size, b.last_modified, b.in_use});
  return out;
}

namespace {

// Takes both locks of an entry without waiting: false when it is being
// made or is in use.
Result<bool> LockForRemoval(const std::string& root, const std::string& hex, FileLock* mat,
                            FileLock* use) {
  CARTON_ASSIGN_OR_RETURN(*mat, FileLock::Open(links::CacheLayout(root).CartonLockPath(hex)));
  CARTON_ASSIGN_OR_RETURN(*use, FileLock::Open(links::CacheLayout(root).CartonUseLockPath(hex)));
  CARTON_ASSIGN_OR_RETURN(bool got, mat->Lock(FileLock::Mode::kExclusive, false));
  if (!got) return false;
  return use->Lock(FileLock::Mode::kExclusive, false);
}

// Removes the entry and then its lock files, holding both locks
// exclusively (FORMAT.md "Lock files"). A lock file that cannot be removed
// is harmless (the next gc tries again), so only the entry's removal can
// fail.
Status RemoveLocked(const std::string& root, const std::string& dir, const std::string& hex,
                    FileLock* mat, FileLock* use) {
  CARTON_RETURN_IF_ERROR(internal::Discard(root, dir, hex));
  (void)use->RemoveFile();
  (void)mat->RemoveFile();
  return Status::Ok();
}

// "carton-<hex>.lock" or "carton-<hex>.use": the hash, else "".
std::string LockFileHash(const std::string& name) {
  constexpr std::string_view kPrefix = links::kCartonLockPrefix;
  if (!name.starts_with(kPrefix) || name.size() < kPrefix.size() + 64) return "";
  std::string hex = name.substr(kPrefix.size(), 64);
  std::string rest = name.substr(kPrefix.size() + 64);
  if (!manifest::ParseHex(hex) || (rest != ".lock" && rest != ".use")) return "";
  return hex;
}

// Removes the lock files of hashes that have no entry (left by removals
// of older versions, loads that failed, temporary directories removed by
// gc), each only while holding it exclusively.
void RemoveStaleLockFiles(const std::string& root) {
  std::error_code ec;
  for (fs::directory_iterator it(links::CacheLayout(root).LocksDir(), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string hex = LockFileHash(it->path().filename().string());
    if (hex.empty()) continue;
    std::string entry = links::CacheLayout(root).CartonEntryDir(hex);
    std::error_code exists_ec;
    if (fs::exists(entry, exists_ec)) continue;
    auto lock = FileLock::Open(it->path().string());
    if (!lock.ok()) continue;
    auto got = lock->Lock(FileLock::Mode::kExclusive, false);
    // A load holds both locks while it makes an entry, so holding either
    // one exclusively, no entry appears after this check.
    if (got.ok() && *got && !fs::exists(entry, exists_ec)) (void)lock->RemoveFile();
  }
}

// The temporaries (internal::ListCacheTemporaries) whose owners are gone.
// Interrupted downloads of cartons by URL ("<hash>.carton.partial", kept
// to be resumed) go into `report`.
void RemoveLeftovers(const std::string& root, GcReport* report) {
  const links::CacheLayout layout(root);
  for (const internal::CacheTemporary& t : internal::ListCacheTemporaries(layout)) {
    FileLock lock;  // held while removing: no load of the hash starts meanwhile
    if (!internal::OwnerGone(layout, t, &lock)) continue;
    struct stat st {};
    const bool sized = ::lstat(t.path.c_str(), &st) == 0;
    std::error_code ec;  // another gc may be removing the same
    if (t.directory) {
      fs::remove_all(t.path, ec);
      continue;
    }
    if (!fs::remove(t.path, ec) || ec) continue;
    if (t.path.filename().string() == t.hex + ".carton" + net::kPartialSuffix) {
      report->removed_partials.push_back(t.hex);
      if (sized) report->freed += static_cast<std::uint64_t>(st.st_size);
    }
  }
}

}  // namespace

Status CartonCache::Remove(const manifest::Digest& hash) const {
  std::string dir = EntryDir(hash), hex = manifest::ToHex(hash);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no such cache entry");
  FileLock mat, use;
  CARTON_ASSIGN_OR_RETURN(bool got, LockForRemoval(root_, hex, &mat, &use));
  if (!got) return InvalidArgument(hex + ": in use by a process that has it loaded");
  // Someone else may have removed it while we took the locks.
  if (!fs::is_directory(dir, ec)) return NotFound(dir + ": no such cache entry");
  return RemoveLocked(root_, dir, hex, &mat, &use);
}

namespace {

// One gc run: the entries and blobs, least recently used first in one
// list, removed until what the cache takes on disk is at most max_size.
class Collector {
 public:
  Collector(const std::string& root, std::vector<CacheEntryInfo> entries,
            std::vector<links::BlobInfo> blobs, GcReport* report)
      : root_(root),
        blob_cache_(root),
        entries_(std::move(entries)),
        blobs_(std::move(blobs)),
        report_(*report) {
    // What the cache takes on disk: the entries, and the blobs that are not
    // also files of entries (hard links).
    for (const auto& e : entries_) total_ += e.size;
    for (const auto& b : blobs_) {
      if (b.links <= 1) total_ += b.size;
    }
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      items_.push_back({entries_[i].last_used, false, i});
    }
    for (std::size_t i = 0; i < blobs_.size(); ++i)
      items_.push_back({blobs_[i].last_used, true, i});
    std::stable_sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
      return a.last_used != b.last_used ? a.last_used < b.last_used : a.blob > b.blob;
    });
  }

  // A blob shared with an entry frees nothing until that entry goes, and
  // its blobs are older than the entry: so go round again while something
  // was removed.
  Status Run(std::uint64_t max_size) {
    bool progress = true;
    while (total_ > max_size && progress) {
      progress = false;
      for (auto& item : items_) {
        if (total_ <= max_size) break;
        if (item.done) continue;
        CARTON_ASSIGN_OR_RETURN(bool removed, item.blob ? RemoveBlob(&item) : RemoveEntry(&item));
        progress = progress || removed;
      }
    }
    report_.remaining = total_;
    return Status::Ok();
  }

 private:
  struct Item {
    std::int64_t last_used;
    bool blob;
    std::size_t index;
    bool done = false;
  };

  // True when the blob was removed.
  Result<bool> RemoveBlob(Item* item) {
    links::BlobInfo& b = blobs_[item->index];
    if (b.links > 1) return false;
    item->done = true;
    Status s = blob_cache_.Remove(b.digest);
    if (s.code() == StatusCode::kInvalidArgument) {  // being fetched, or in use by a pull
      report_.skipped_blobs_in_use.push_back(manifest::ToHex(b.digest));
      return false;
    }
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    total_ -= std::min(total_, b.size);
    if (!s.ok()) return false;
    report_.freed += b.size;
    report_.removed_blobs.push_back(manifest::ToHex(b.digest));
    return true;
  }

  // True when the entry was removed; one in use is skipped.
  Result<bool> RemoveEntry(Item* item) {
    const CacheEntryInfo& e = entries_[item->index];
    item->done = true;
    FileLock mat, use;
    auto got = LockForRemoval(root_, e.hash, &mat, &use);
    if (!got.ok() || !*got) {
      report_.skipped_in_use.push_back(e.hash);
      return false;
    }
    total_ -= std::min(total_, e.size);
    std::error_code ec;
    if (!fs::is_directory(e.dir, ec)) return false;  // removed by another process since List()
    CARTON_RETURN_IF_ERROR(RemoveLocked(root_, e.dir, e.hash, &mat, &use));
    report_.freed += e.size - std::min(e.size, NowUnshared());
    report_.removed.push_back(e.hash);
    return true;
  }

  // An entry's linked files were also blobs: those now held by no entry
  // count as blobs. Returns their bytes, which removing the entry did not
  // free.
  std::uint64_t NowUnshared() {
    std::uint64_t bytes = 0;
    for (auto& b : blobs_) {
      if (b.links <= 1) continue;
      struct stat st;
      if (::stat(b.path.c_str(), &st) != 0) continue;
      b.links = static_cast<std::uint64_t>(st.st_nlink);
      if (b.links <= 1) {
        total_ += b.size;
        bytes += b.size;
      }
    }
    return bytes;
  }

  const std::string& root_;
  links::BlobCache blob_cache_;
  std::vector<CacheEntryInfo> entries_;
  std::vector<links::BlobInfo> blobs_;
  GcReport& report_;
  std::uint64_t total_ = 0;
  std::vector<Item> items_;
};

}  // namespace

Result<GcReport> CartonCache::Gc(std::uint64_t max_size) const {
  GcReport report;
  RemoveLeftovers(root_, &report);
  CARTON_ASSIGN_OR_RETURN(auto entries, List());
  links::BlobCache blob_cache(root_);
  CARTON_ASSIGN_OR_RETURN(auto blobs, blob_cache.List());
  Collector collector(root_, std::move(entries), std::move(blobs), &report);
  CARTON_RETURN_IF_ERROR(collector.Run(max_size));
  RemoveStaleLockFiles(root_);
  // Partial downloads no fetch is writing go whatever the size limit: they
  // are not part of the cache's contents until finished.
  for (const auto& p : blob_cache.RemoveStalePartials()) {
    report.removed_partials.push_back(manifest::ToHex(p.digest));
    report.freed += p.size;
  }
  blob_cache.RemoveStaleLocks();
  return report;
}

Result<GcReport> CartonCache::Clean() const {
  CARTON_ASSIGN_OR_RETURN(GcReport report, Gc(std::numeric_limits<std::uint64_t>::max()));
  links::BlobCache blob_cache(root_);
  CARTON_ASSIGN_OR_RETURN(auto blobs, blob_cache.List());
  for (const auto& b : blobs) {
    if (b.links > 1) continue;  // a file of a cached carton too
    Status s = blob_cache.Remove(b.digest);
    if (s.code() == StatusCode::kInvalidArgument) {  // in use, or being fetched
      report.skipped_blobs_in_use.push_back(manifest::ToHex(b.digest));
      continue;
    }
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    if (s.ok()) {
      report.removed_blobs.push_back(manifest::ToHex(b.digest));
      report.freed += b.size;
      report.remaining -= std::min(report.remaining, b.size);
    }
  }
  return report;
}

Result<std::uint64_t> ParseSize(std::string_view text) {
  std::string t(text);
  std::size_t i = 0;
  std::uint64_t n = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
    std::uint64_t next = 0;
    if (!CheckedMul(n, 10, &next) || !CheckedAdd(next, t[i] - '0', &n)) {
      return InvalidArgument("size \"" + t + "\" is too large");
    }
    ++i;
  }
  if (i == 0) return InvalidArgument("size \"" + t + "\": expected a number such as 500M or 2G");
  std::string unit = t.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB")
    unit.resize(unit.size() - 2);
  else if (unit.size() >= 2 && unit.back() == 'B')
    unit.pop_back();
  int shift = 0;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return InvalidArgument("size \"" + t + "\": unknown unit (use K, M, G or T)");
  std::uint64_t out = 0;
  if (!CheckedMul(n, std::uint64_t{1} << shift, &out)) {
    return InvalidArgument("size \"" + t + "\" is too large");
  }
  return out;
}

}  // namespace carton::loader

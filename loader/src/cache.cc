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

// Moves `dir` out of the way (so no load finds it any more) and deletes it.
Status Discard(const std::string& root, const std::string& dir, const std::string& hex) {
  std::error_code ec;
  fs::path trash = fs::path(CartonsDir(root)) / (".trash-" + hex + "-" + RandomSuffix());
  fs::rename(dir, trash, ec);
  if (ec) return IoError(dir + ": cannot remove the cache entry: " + ec.message());
  fs::remove_all(trash, ec);
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

std::string CartonsDir(const std::string& root) { return root + "/cartons"; }
std::string MaterializeLockPath(const std::string& root, const std::string& hex) {
  // The lock OpenLocal holds while it downloads a carton by URL too.
  return CartonLockPath(root, hex);
}
std::string UseLockPath(const std::string& root, const std::string& hex) {
  return root + "/locks/carton-" + hex + ".use";
}

std::string DownloadsDir(const std::string& root) { return root + "/downloads"; }

Result<AcquiredEntry> AcquireEntry(const std::string& root, CartonSource* source,
                                   const LoadOptions& options, LoadStats* stats) {
  const manifest::Digest& hash = source->manifest_hash();
  const std::string hex = manifest::ToHex(hash);
  const std::string dir = CartonsDir(root) + "/" + hex;
  CARTON_ASSIGN_OR_RETURN(FileLock use, FileLock::Open(UseLockPath(root, hex)));
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
  CARTON_ASSIGN_OR_RETURN(FileLock own, FileLock::Open(MaterializeLockPath(root, hex)));
  CARTON_ASSIGN_OR_RETURN(locked, own.Lock(FileLock::Mode::kExclusive));
  // Someone may have made (or repaired) it while we waited.
  if (auto entry = hit()) return std::move(*entry);
  if (Exists(dir)) CARTON_RETURN_IF_ERROR(Discard(root, dir, hex));
  // Temporary directories of this hash belong to loads that died (we hold
  // the lock they would hold).
  std::error_code ec;
  for (fs::directory_iterator it(CartonsDir(root), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().rfind(".tmp-" + hex + "-", 0) == 0) {
      std::error_code remove_ec;
      fs::remove_all(it->path(), remove_ec);
    }
  }
  CARTON_ASSIGN_OR_RETURN(const CartonReader* whole,
                          source->Whole(DownloadsDir(root), options.progress));
  std::string tmp = CartonsDir(root) + "/.tmp-" + hex + "-" + RandomSuffix();
  // Registered while it exists: an interrupted load removes it.
  const TemporaryPath registration = TemporaryPath::Create(
      tmp, TemporaryKind::kDirectory, [&] { return fs::create_directories(tmp, ec); });
  if (!registration.registered()) {
    return IoError(tmp + ": cannot create: " + (ec ? ec.message() : "exists"));
  }
  MaterializeSource src;
  src.reader = whole;
  src.file = &source->file();
  src.cache_root = root;
  src.threads = options.threads;
  src.allow_file_links = options.allow_file_links;
  src.progress = options.progress;
  auto rec = Materialize(src, tmp, stats);
  if (rec.ok()) {
    Status s = WriteEntryRecord(tmp, *rec);
    if (!s.ok()) rec = s;
  }
  if (!rec.ok()) {
    fs::remove_all(tmp, ec);
    return rec.status();
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    Status s = IoError(dir + ": cannot move the new cache entry into place: " + ec.message());
    fs::remove_all(tmp, ec);
    return s;
  }
  return AcquiredEntry{dir, std::move(rec).value(), std::move(use), false};
}

Result<std::vector<std::string>> VerifyEntryDir(const std::string& dir,
                                                const manifest::Digest& hash, unsigned threads,
                                                const ProgressFn& progress) {
  std::vector<std::string> problems;
  auto bytes = ReadFile(dir + "/MANIFEST");
  if (!bytes.ok()) {
    problems.push_back("MANIFEST: " + bytes.status().message());
    return problems;
  }
  const manifest::Digest got = manifest::Sha256Of(*bytes);
  if (got != hash) {
    problems.push_back("MANIFEST: sha256 " + manifest::ToHex(got) + " is not the entry's name");
  }
  auto m = manifest::Manifest::Parse(*bytes);
  if (!m.ok()) {
    problems.push_back(m.status().message());
    return problems;
  }
  std::vector<std::string> paths;
  std::set<std::string> listed = {"MANIFEST", std::string(kEntryRecordName),
                                  std::string(kSourceName)};
  // Mapped files are hashed where they are: in the source .carton.
  std::map<std::string, std::uint64_t> mapped;  // path -> data offset
  std::map<std::string, std::uint64_t> sizes;
  auto rec = ReadEntryRecord(dir);
  if (rec.ok()) {
    for (const auto& f : rec->files) {
      if (f.mapped) {
        mapped[f.path] = f.data_offset;
        sizes[f.path] = f.size;
      }
    }
  }
  std::optional<MappedFile> source;
  if (!mapped.empty()) {
    auto opened = MappedFile::Open(dir + "/" + std::string(kSourceName));
    if (!opened.ok()) {
      problems.push_back(std::string(kSourceName) + ": " + opened.status().message());
    } else {
      source = std::move(opened).value();
    }
  }
  // Mapped files are hashed first, against their own total (the other
  // files' sizes are known only once listed).
  std::uint64_t mapped_total = 0, mapped_done = 0;
  for (const auto& [path, size] : sizes) mapped_total += size;
  for (const auto& me : m->entries()) {
    if (auto it = mapped.find(me.path); it != mapped.end()) {
      listed.insert(me.path);
      if (!source) continue;
      if (!InBounds(it->second, sizes[me.path], source->size())) {
        problems.push_back(me.path + ": outside the source .carton");
        continue;
      }
      manifest::Digest d = manifest::Sha256Of(source->bytes().subspan(it->second, sizes[me.path]));
      mapped_done += sizes[me.path];
      if (progress) progress(mapped_done, mapped_total);
      if (d != me.sha256) {
        problems.push_back(me.path +
                           " (in the source .carton): " + manifest::DigestMismatch(d, me.sha256));
      }
      continue;
    }
    std::string p = dir + "/" + me.path;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      problems.push_back(me.path + ": missing");
      continue;
    }
    paths.push_back(p);
    listed.insert(me.path);
  }
  std::uint64_t total = mapped_total;
  std::atomic<std::uint64_t> done{mapped_done};
  for (const auto& p : paths) {
    std::error_code size_ec;
    const auto size = fs::file_size(p, size_ec);
    if (!size_ec) total += size;
  }
  const auto count = [&](std::uint64_t n) {
    const std::uint64_t now = done += n;
    if (progress) progress(now, total);
  };
  auto digests = manifest::HashFiles(paths, threads, {}, count);
  if (!digests.ok()) return digests.status();
  std::size_t k = 0;
  for (const auto& me : m->entries()) {
    if (k < paths.size() && paths[k] == dir + "/" + me.path) {
      if ((*digests)[k] != me.sha256) {
        problems.push_back(me.path + ": " + manifest::DigestMismatch((*digests)[k], me.sha256));
      }
      ++k;
    }
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (!listed.count(rel)) problems.push_back(rel + ": not listed in MANIFEST");
  }
  if (ec) return IoError(dir + ": cannot list: " + ec.message());
  return problems;
}

}  // namespace internal

namespace fs = std::filesystem;

CartonCache::CartonCache(std::string root) : root_(std::move(root)) {}

Result<CartonCache> CartonCache::OpenDefault() {
  CARTON_ASSIGN_OR_RETURN(std::string root, links::DefaultCacheDir());
  return CartonCache(std::move(root));
}

std::string CartonCache::EntryDir(const manifest::Digest& hash) const {
  return internal::CartonsDir(root_) + "/" + manifest::ToHex(hash);
}

namespace {

std::uint64_t DirSize(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

}  // namespace

Result<std::vector<CacheEntryInfo>> CartonCache::List() const {
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  std::string dir = internal::CartonsDir(root_);
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
    info.size = rec.ok() ? rec->total_size : DirSize(it->path());
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
  for (fs::directory_iterator it(internal::DownloadsDir(root_), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) continue;
    if (!manifest::ParseHex(name.substr(0, 64))) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    bool in_use = false;
    auto lock = FileLock::Open(internal::MaterializeLockPath(root_, name.substr(0, 64)));
    if (lock.ok()) {
      auto got = lock->Lock(FileLock::Mode::kExclusive, false);
      in_use = got.ok() && !*got;
    }
    out.push_back({"carton", name.substr(0, 64), it->path().string(),
                   static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec, in_use});
  }
  return out;
}

namespace {

// Takes both locks of an entry without waiting: false when it is being
// made or is in use.
Result<bool> LockForRemoval(const std::string& root, const std::string& hex, FileLock* mat,
                            FileLock* use) {
  CARTON_ASSIGN_OR_RETURN(*mat, FileLock::Open(internal::MaterializeLockPath(root, hex)));
  CARTON_ASSIGN_OR_RETURN(*use, FileLock::Open(internal::UseLockPath(root, hex)));
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
  constexpr std::string_view kPrefix = "carton-";
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
  for (fs::directory_iterator it(root + "/locks", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string hex = LockFileHash(it->path().filename().string());
    if (hex.empty()) continue;
    std::string entry = internal::CartonsDir(root) + "/" + hex;
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

// Temporary and trash directories, and downloads, that belong to no
// running process. Interrupted downloads of cartons by URL
// ("<hash>.carton.partial", kept to be resumed) go into `report`.
void RemoveLeftovers(const std::string& root, GcReport* report) {
  std::error_code ec;
  std::string cartons = internal::CartonsDir(root);
  // Leftovers of killed loads: a temporary directory whose hash lock is
  // free belongs to nobody.
  for (fs::directory_iterator it(cartons, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code remove_ec;  // another gc may be removing the same
    if (name.rfind(".trash-", 0) == 0) {
      fs::remove_all(it->path(), remove_ec);
    } else if (name.rfind(".tmp-", 0) == 0 && name.size() > 5 + 64) {
      auto lock = FileLock::Open(internal::MaterializeLockPath(root, name.substr(5, 64)));
      if (lock.ok()) {
        auto got = lock->Lock(FileLock::Mode::kExclusive, false);
        if (got.ok() && *got) fs::remove_all(it->path(), remove_ec);
      }
    }
  }
  // Downloads of killed URL loads ("<hash>-<n>.carton" and the download's
  // temporary ".<hash>-<n>.carton.tmp-*"): a load downloads under the
  // hash's materialize lock. A whole download from a server that ignores
  // Range is named by its process instead, and is a leftover once that
  // process is gone.
  ec.clear();
  for (fs::directory_iterator it(internal::DownloadsDir(root), ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.starts_with(kTemporaryDownloadPrefix)) {
      const long pid = std::strtol(name.c_str() + kTemporaryDownloadPrefix.size(), nullptr, 10);
      std::error_code remove_ec;
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        fs::remove(it->path(), remove_ec);
      }
      continue;
    }
    if (name.starts_with(".")) name.erase(0, 1);
    if (name.size() < 64 || !manifest::ParseHex(name.substr(0, 64))) continue;
    auto lock = FileLock::Open(internal::MaterializeLockPath(root, name.substr(0, 64)));
    if (!lock.ok()) continue;
    auto got = lock->Lock(FileLock::Mode::kExclusive, false);
    if (!got.ok() || !*got) continue;
    struct stat st {};
    const bool sized = ::lstat(it->path().c_str(), &st) == 0;
    std::error_code remove_ec;
    if (!fs::remove(it->path(), remove_ec) || remove_ec) continue;
    if (name == name.substr(0, 64) + ".carton.partial") {
      report->removed_partials.push_back(name.substr(0, 64));
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

Result<GcReport> CartonCache::Gc(std::uint64_t max_size) const {
  GcReport report;
  RemoveLeftovers(root_, &report);
  CARTON_ASSIGN_OR_RETURN(auto entries, List());
  links::BlobCache blob_cache(root_);
  CARTON_ASSIGN_OR_RETURN(auto blobs, blob_cache.List());
  // What the cache takes on disk: the entries, and the blobs that are not
  // also files of entries (hard links).
  std::uint64_t total = 0;
  for (const auto& e : entries) total += e.size;
  for (const auto& b : blobs) {
    if (b.links <= 1) total += b.size;
  }

  // Entries and blobs in one list, least recently used first.
  struct Item {
    std::int64_t last_used;
    bool blob;
    std::size_t index;
    bool done = false;
  };
  std::vector<Item> items;
  for (std::size_t i = 0; i < entries.size(); ++i)
    items.push_back({entries[i].last_used, false, i});
  for (std::size_t i = 0; i < blobs.size(); ++i) items.push_back({blobs[i].last_used, true, i});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.last_used != b.last_used ? a.last_used < b.last_used : a.blob > b.blob;
  });

  // A blob shared with an entry frees nothing until that entry goes, and
  // its blobs are older than the entry: so go round again while something
  // was removed.
  bool progress = true;
  while (total > max_size && progress) {
    progress = false;
    for (auto& item : items) {
      if (total <= max_size) break;
      if (item.done) continue;
      if (item.blob) {
        links::BlobInfo& b = blobs[item.index];
        if (b.links > 1) continue;
        item.done = true;
        Status s = blob_cache.Remove(b.digest);
        if (s.code() == StatusCode::kInvalidArgument) continue;  // being fetched
        if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
        total -= std::min(total, b.size);
        if (s.ok()) {
          report.freed += b.size;
          report.removed_blobs.push_back(manifest::ToHex(b.digest));
          progress = true;
        }
        continue;
      }
      const CacheEntryInfo& e = entries[item.index];
      item.done = true;
      FileLock mat, use;
      auto got = LockForRemoval(root_, e.hash, &mat, &use);
      if (!got.ok() || !*got) {
        report.skipped_in_use.push_back(e.hash);
        continue;
      }
      total -= std::min(total, e.size);
      std::error_code ec;
      if (!fs::is_directory(e.dir, ec)) continue;  // removed by another process since List()
      CARTON_RETURN_IF_ERROR(RemoveLocked(root_, e.dir, e.hash, &mat, &use));
      progress = true;
      std::uint64_t freed = e.size;
      // Its linked files were also blobs: those now held by no entry count
      // as blobs.
      for (auto& b : blobs) {
        if (b.links <= 1) continue;
        struct stat st;
        if (::stat(b.path.c_str(), &st) != 0) continue;
        b.links = static_cast<std::uint64_t>(st.st_nlink);
        if (b.links <= 1) {
          total += b.size;
          freed -= std::min(freed, b.size);
        }
      }
      report.freed += freed;
      report.removed.push_back(e.hash);
    }
  }
  report.remaining = total;
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

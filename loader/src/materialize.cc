#include "materialize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>

#include "carton/carton/symlink.h"
#include "carton/common/atomic_file.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/unique_fd.h"
#include "carton/links/blob_cache.h"
#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"

namespace carton::loader::internal {
namespace {

namespace fs = std::filesystem;

Result<UniqueFd> CreateFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoIoError(errno, path + ": cannot create");
  return fd;
}

Status WriteAll(int fd, ByteView data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(errno, path + ": write failed");
    }
    data = data.subspan(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

// Copies [offset, offset + size) of `in` to the new file `out`, in the
// kernel (copy_file_range shares blocks on filesystems that can), falling
// back to read/write where the kernel cannot.
Status CopyRange(int in, std::uint64_t offset, std::uint64_t size, const std::string& out) {
  CARTON_ASSIGN_OR_RETURN(UniqueFd fd, CreateFile(out));
  loff_t off = static_cast<loff_t>(offset);
  std::uint64_t left = size;
  bool kernel = true;
  std::vector<std::byte> buf;
  while (left > 0) {
    if (kernel) {
      ssize_t n = ::copy_file_range(in, &off, fd.get(), nullptr,
                                    std::min<std::uint64_t>(left, 1u << 30), 0);
      if (n > 0) {
        left -= static_cast<std::uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return IoError(out + ": source ended early");
      if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP) {
        return ErrnoIoError(errno, out + ": copy failed");
      }
      kernel = false;
      buf.resize(4 << 20);
    }
    ssize_t n = ::pread(in, buf.data(), std::min<std::uint64_t>(left, buf.size()), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError(out + ": cannot read the source");
    CARTON_RETURN_IF_ERROR(
        WriteAll(fd.get(), ByteView(buf.data(), static_cast<std::size_t>(n)), out));
    off += n;
    left -= static_cast<std::uint64_t>(n);
  }
  if (::close(fd.Release()) != 0) return ErrnoIoError(errno, out + ": close failed");
  return Status::Ok();
}

}  // namespace

bool IsReservedEntryPath(std::string_view path) {
  return path == kEntryRecordName || path == kSourceName;
}

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Files served as views only, which no framework needs to open by name.
bool Mappable(std::string_view path, std::uint64_t size) {
  if (size < kMapThreshold) return false;
  return (path.rfind("model/", 0) == 0 && EndsWith(path, ".safetensors")) ||
         (path.rfind("tensor_data/", 0) == 0 && EndsWith(path, ".bin"));
}

// Links the inode behind `fd` (the very file that is being hashed, even if
// its path was replaced meanwhile) into the entry. False when the
// filesystem cannot (another device, no hard links).
bool LinkSource(int fd, const std::string& dest) {
  std::string proc = "/proc/self/fd/" + std::to_string(fd);
  return ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, dest.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

// Fetches a linked file into the blob cache and links it to `out` (copies
// it across filesystems). Blobs are immutable and named by their hash, so
// the entry may share the file. A blob that gc evicts between the fetch
// and the link is fetched again.
Status LinkBlob(const links::BlobCache& blobs, const manifest::ManifestEntry& me,
                const std::vector<std::string>& urls, const net::FetchOptions& opts,
                const std::string& out) {
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    auto blob = blobs.Fetch(me.sha256, urls, 0, opts);
    if (!blob.ok()) return blob.status().WithContext(me.path);
    if (::link(blob->c_str(), out.c_str()) == 0) return Status::Ok();
    UniqueFd in(::open(blob->c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (!in.valid() || ::fstat(in.get(), &st) != 0) {
      if (errno == ENOENT && attempt < kAttempts) continue;
      return ErrnoIoError(errno, *blob + ": cannot open");
    }
    return CopyRange(in.get(), 0, static_cast<std::uint64_t>(st.st_size), out);
  }
}

}  // namespace

Result<MaterializePlan> PlanMaterialize(const MaterializeSource& src, bool source_linked) {
  const CartonReader& reader = *src.reader;
  const ZipReader& zip = reader.zip();
  const manifest::Manifest& m = reader.manifest();
  const auto& entries = m.entries();
  auto fail = [&](const Status& s) { return s.WithContext(reader.location()); };
  // Every MANIFEST file missing from the zip is linked (CartonReader::Check).
  std::set<std::string_view> linked;
  for (const LinkedFile& f : reader.linked_files()) linked.insert(f.path);

  MaterializePlan plan;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& me = entries[i];
    if (IsReservedEntryPath(me.path)) {
      return fail(Unsupported(me.path + ": this name is reserved by the loader's cache"));
    }
    EntryFile f;
    f.path = me.path;
    const ZipEntry* ze = zip.Find(me.path);
    if (ze != nullptr && ze->is_symlink) {
      auto target = ResolveSymlinkEntry(zip, *ze, &m);
      if (!target.ok()) return fail(target.status());
      const manifest::ManifestEntry* te = m.Find(*target);
      if (te == nullptr) {
        return fail(Corrupt(*target + ": in the archive but not listed in MANIFEST"));
      }
      plan.symlinks.push_back({i, static_cast<std::size_t>(te - entries.data())});
    } else if (ze == nullptr || ze->is_dir) {
      if (linked.count(me.path) == 0) {
        return fail(Internal(me.path + ": neither in the archive nor linked"));
      }
      plan.tasks.push_back({TaskKind::kLink, i, 0});
    } else {
      f.size = ze->size;
      auto offset = zip.DataOffset(me.path);
      if (offset.ok()) {
        f.data_offset = *offset;
        plan.tasks.push_back({TaskKind::kHashStored, i, f.size});
        // Every file is in the entry, where runners open it by name (a
        // reflink or kernel copy, CopyRange); a mapped one is also viewed
        // in the source, so tensors cost no memory of their own.
        plan.tasks.push_back({TaskKind::kCopyStored, i, f.size});
        if (source_linked && Mappable(me.path, f.size)) {
          f.mapped = true;
          plan.any_mapped = true;
        }
      } else {
        plan.tasks.push_back({TaskKind::kDecode, i, f.size});
      }
    }
    plan.record.files.push_back(std::move(f));
  }
  // Largest first so both cores stay busy to the end; a stored file's hash
  // and copy run side by side.
  std::stable_sort(
      plan.tasks.begin(), plan.tasks.end(),
      [](const MaterializeTask& a, const MaterializeTask& b) { return a.size > b.size; });
  return plan;
}

// Runs the plan's tasks on src.threads, counting the bytes of each kind.
class TaskRunner {
 public:
  TaskRunner(const MaterializeSource& src, const MaterializePlan& plan, const std::string& dir)
      : src_(src), plan_(plan), dir_(dir), blobs_(src.cache_root) {
    for (const LinkedFile& f : src.reader->linked_files()) urls_[f.path] = &f.urls;
    for (const auto& task : plan.tasks) total_ += task.size;
  }

  // Every task's status, in task order.
  std::vector<Status> RunAll() {
    std::vector<Status> results(plan_.tasks.size());
    ParallelFor(plan_.tasks.size(), src_.environment->threads,
                [&](std::size_t t) { results[t] = Run(plan_.tasks[t]); });
    return results;
  }

  void AddTo(LoadStats* stats) const {
    stats->bytes_hashed += hashed_;
    stats->bytes_copied += copied_;
    stats->bytes_decoded += decoded_;
    stats->bytes_fetched += fetched_;
  }

 private:
  Status Run(const MaterializeTask& task) {
    const auto& me = src_.reader->manifest().entries()[task.file];
    const std::string out = dir_ + "/" + me.path;
    switch (task.kind) {
      case TaskKind::kHashStored:
        return HashStored(me);
      case TaskKind::kCopyStored: {
        const EntryFile& f = plan_.record.files[task.file];
        Status s = CopyRange(src_.file->fd(), f.data_offset, f.size, out);
        if (s.ok()) copied_ += f.size;
        Count(f.size);
        return s;
      }
      case TaskKind::kDecode: {
        Status s = src_.reader->ExtractTo(me.path, out, [this](std::uint64_t n) { Count(n); });
        if (s.ok()) {
          hashed_ += task.size;
          decoded_ += task.size;
        }
        return s;
      }
      case TaskKind::kLink:
        return Link(me, out);
    }
    return Internal("unknown materialize task");
  }

  // A stored file used from the mapping: hashed there.
  Status HashStored(const manifest::ManifestEntry& me) {
    auto mapped = src_.reader->zip().MappedData(me.path);
    if (!mapped.ok()) return mapped.status();
    manifest::Sha256 h;
    Status s = ForEachMappedStep(*mapped, [&](ByteView step) {
      h.Update(step);
      Count(step.size());
      return Status::Ok();
    });
    hashed_ += mapped->size();
    if (s.ok()) s = manifest::CheckDigest(me.path, h.Finish(), me.sha256);
    return s;
  }

  // A linked file: from the blob cache (fetched into it first if needed).
  Status Link(const manifest::ManifestEntry& me, const std::string& out) {
    net::FetchOptions opts = src_.environment->network;
    opts.show_progress = false;
    Status s = LinkBlob(blobs_, me, *urls_.at(me.path), opts, out);
    struct stat st;
    if (s.ok() && ::stat(out.c_str(), &st) == 0) {
      fetched_ += static_cast<std::uint64_t>(st.st_size);
      Count(static_cast<std::uint64_t>(st.st_size));
    }
    return s;
  }

  void Count(std::uint64_t n) {
    const std::uint64_t now = done_ += n;
    if (src_.progress) src_.progress(now, total_);
  }

  const MaterializeSource& src_;
  const MaterializePlan& plan_;
  const std::string& dir_;
  links::BlobCache blobs_;
  std::map<std::string_view, const std::vector<std::string>*> urls_;
  std::uint64_t total_ = 0;
  std::atomic<std::uint64_t> done_{0}, hashed_{0}, copied_{0}, decoded_{0}, fetched_{0};
};

Status RunMaterialize(const MaterializeSource& src, const MaterializePlan& plan,
                      const std::string& dir, LoadStats* stats) {
  const CartonReader& reader = *src.reader;
  std::error_code ec;
  for (const auto& me : reader.manifest().entries()) {
    fs::create_directories((fs::path(dir) / me.path).parent_path(), ec);
    if (ec) return IoError(dir + "/" + me.path + ": cannot create its directory: " + ec.message());
  }
  TaskRunner runner(src, plan, dir);
  for (const Status& s : runner.RunAll()) {
    if (!s.ok()) return s.WithContext(reader.location());
  }
  if (stats != nullptr) runner.AddTo(stats);
  return Status::Ok();
}

Status LinkSymlinks(const MaterializeSource& src, MaterializePlan* plan, const std::string& dir) {
  const ZipReader& zip = src.reader->zip();
  EntryRecord& record = plan->record;
  // Frameworks open files by name, so the entry holds the symlink too: a
  // relative one, or, when the target is served from the source, the same
  // view (carton/FORMAT.md, "Symlink entries").
  std::set<std::size_t> aliases;
  for (const auto& [link, target] : plan->symlinks) {
    aliases.insert(link);
    EntryFile& f = record.files[link];
    const EntryFile& t = record.files[target];
    f.size = t.size;
    f.mapped = t.mapped;
    f.data_offset = t.data_offset;
    if (f.mapped) continue;
    const std::string out = dir + "/" + f.path;
    const std::string rel = SymlinkPathOnDisk(f.path, t.path);
    if (::symlink(rel.c_str(), out.c_str()) != 0) {
      return ErrnoIoError(errno, out + ": cannot create the symlink");
    }
  }
  for (std::size_t i = 0; i < record.files.size(); ++i) {
    EntryFile& f = record.files[i];
    if (aliases.count(i) > 0) continue;
    if (zip.Find(f.path) == nullptr) {
      struct stat st;
      std::string p = dir + "/" + f.path;
      if (::stat(p.c_str(), &st) != 0) return IoError(p + ": missing after fetch");
      f.size = static_cast<std::uint64_t>(st.st_size);
    }
    record.total_size += f.size;
  }
  return Status::Ok();
}

Result<EntryRecord> Materialize(const MaterializeSource& src, const std::string& dir,
                                LoadStats* stats) {
  const std::string source_path = dir + "/" + std::string(kSourceName);
  const bool linked = LinkSource(src.file->fd(), source_path);
  CARTON_ASSIGN_OR_RETURN(MaterializePlan plan, PlanMaterialize(src, linked));
  CARTON_RETURN_IF_ERROR(RunMaterialize(src, plan, dir, stats));
  CARTON_RETURN_IF_ERROR(LinkSymlinks(src, &plan, dir));
  EntryRecord& record = plan.record;
  if (plan.any_mapped) {
    auto identity = IdentityOfFd(src.file->fd());
    if (!identity.ok()) return identity.status().WithContext(src.reader->location());
    record.source = *identity;
    record.total_size += record.source->size;
  } else if (linked) {
    ::unlink(source_path.c_str());
  }
  const ManifestFile& m = src.reader->manifest_file();
  record.manifest_hash = m.hash;
  CARTON_RETURN_IF_ERROR(WriteFileAtomically(dir + "/MANIFEST", AsBytes(m.text)));
  return std::move(record);
}

}  // namespace carton::loader::internal

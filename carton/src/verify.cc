#include "carton/carton/verify.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "carton/carton/reader.h"
#include "carton/common/mapped_file.h"
#include "carton/common/parallel.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"
#include "carton/zip/reader.h"
#include "consistency.h"

namespace carton {
namespace {

// Stored entries are read with pread(2) into one buffer of this size per
// entry, where the CRC-32 and SHA-256 find the bytes in the cache. Hashing
// from a mapping in steps that drop their pages spent a fifth of the time
// on page faults and madvise. One 1 GiB entry on one thread (2 cores,
// tmpfs, medians of 5): 0.79 s mapped, 0.74 s read (256 KiB buffers:
// 0.75 s); `openssl dgst -sha256` of the file 0.70 s.
constexpr std::size_t kReadStep = std::size_t{1} << 20;
// When threads are spare, a stored entry this large has its CRC-32 checked
// by a task of its own, so that its SHA-256 alone sets its time.
constexpr std::uint64_t kSplitMinSize = std::uint64_t{4} << 20;

// Hands `size` bytes of `file` from `offset` on to `fn`, piece by piece,
// through one buffer. Errors: those of MappedFile::ReadAt.
Status ReadStored(const MappedFile& file, std::uint64_t offset, std::uint64_t size,
                  const std::function<void(ByteView)>& fn) {
  std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(size, kReadStep)));
  ::posix_fadvise(file.fd(), static_cast<off_t>(offset), static_cast<off_t>(size),
                  POSIX_FADV_SEQUENTIAL);
  for (std::uint64_t done = 0; done < size;) {
    const MutableByteView piece(buffer.data(), static_cast<std::size_t>(std::min<std::uint64_t>(
                                                   buffer.size(), size - done)));
    CARTON_RETURN_IF_ERROR(file.ReadAt(offset + done, piece));
    fn(piece);
    done += piece.size();
  }
  return Status::Ok();
}

// One task of CheckHashes: an entry's SHA-256 and CRC-32 in one pass
// (kBoth), or one of them (a large stored entry split over two threads).
struct HashTask {
  enum Kind { kBoth, kSha256, kCrc32 };
  const manifest::ManifestEntry* entry;
  Kind kind;
  std::size_t split;  // index into the split results (kSha256, kCrc32)
};

// What the two tasks of a split entry found, judged once both are done.
struct SplitResult {
  Status read;  // reading for the SHA-256
  manifest::Digest digest{};
  Status crc;  // reading for, or checking, the CRC-32
};

class Checker {
 public:
  Checker(CartonReader& reader, VerifyReport* report)
      : reader_(reader), zip_(reader.zip()), limits_(reader.limits()), report_(report) {}

  void Problem(std::string where, std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    report_->problems.push_back({std::move(where), std::move(message)});
  }

  void Problems(const std::vector<CartonProblem>& problems) {
    for (const auto& p : problems) Problem(p.where, p.message);
  }

  // MANIFEST, LINKS and the entry and LINKS rules of every carton reader
  // (reader.h), each broken rule a problem. Returns the manifest when
  // MANIFEST is present and well-formed.
  const manifest::Manifest* CheckStructure() {
    const Status manifest = reader_.ReadManifest();
    // A LINKS that does not parse is a problem, and then covers no file.
    const Status links = reader_.ReadLinks();
    Problems(reader_.EntryProblems());
    if (!links.ok()) {
      // "LINKS: why" reads "LINKS: LINKS: why" after the entry name.
      std::string_view message = links.message();
      if (message.rfind("LINKS: ", 0) == 0) message.remove_prefix(7);
      Problem("LINKS", std::string(message));
    }
    if (!manifest.ok()) {
      Problem("MANIFEST", zip_.Find("MANIFEST") == nullptr ? "missing: every carton has a MANIFEST"
                                                           : manifest.message());
      return nullptr;
    }
    report_->manifest_hash = reader_.manifest_file().hash;
    Problems(reader_.LinkProblems());
    for (const LinkedFile& f : reader_.linked_files()) linked_.insert(f.path);
    report_->linked_files = reader_.linked_files().size();
    return &reader_.manifest();
  }

  // Hashes every entry MANIFEST lists against its line, and checks the
  // CRC-32 of the stored ones (unpack checks it, so verify must not pass an
  // entry that unpack refuses).
  void CheckHashes(const manifest::Manifest& m, unsigned threads, const ProgressFn& progress) {
    const std::vector<const manifest::ManifestEntry*> present = HashableEntries(m);
    std::atomic<std::uint64_t> bytes{0};
    std::uint64_t total = 0;
    for (const auto* me : present) total += zip_.Find(me->path)->size;
    const std::function<void(std::uint64_t)> count = [&](std::uint64_t n) {
      const std::uint64_t done = bytes += n;
      if (progress) progress(done, total);
    };
    const std::vector<HashTask> tasks = PlanTasks(present, threads);
    ParallelFor(tasks.size(), threads, [&](std::size_t i) { RunTask(tasks[i], count); });
    for (const HashTask& t : tasks) {
      if (t.kind != HashTask::kSha256) continue;
      const SplitResult& r = split_[t.split];
      Judge(*t.entry, r.read, r.digest, r.crc);
    }
    report_->files_hashed = present.size();
    report_->bytes_hashed = bytes;
  }

  // Fetches each linked file through the blob cache (a cached copy is
  // rehashed; a download is hashed as it arrives).
  void FetchLinked(const Environment& environment) {
    for (const LinkedFile& f : reader_.linked_files()) {
      auto blob = ResolveLinkedFile(f, environment, /*rehash=*/true);
      if (!blob.ok()) {
        Problem(f.path, "linked file: " + blob.status().message());
        continue;
      }
      std::error_code ec;
      const auto size = std::filesystem::file_size(*blob, ec);
      ++report_->linked_fetched;
      ++report_->files_hashed;
      if (!ec) report_->bytes_hashed += size;
    }
  }

  std::optional<CartonConfig> CheckConfig(ConfigParseDetails* details) {
    auto text = reader_.ReadText("carton.toml", limits_.config.max_size);
    if (!text.ok()) {
      Problem("carton.toml", text.status().code() == StatusCode::kNotFound
                                 ? "missing: every carton has a carton.toml"
                                 : text.status().message());
      return std::nullopt;
    }
    auto config = ParseConfig(*text, "carton.toml", limits_.config, details);
    if (!config.ok()) {
      Problem("carton.toml", config.status().message());
      return std::nullopt;
    }
    return std::move(config).value();
  }

  bool Present(const std::string& path) const {
    const ZipEntry* e = zip_.Find(path);
    return (e != nullptr && !e->is_dir) || linked_.count(path) > 0;
  }

  // The checks pack runs too (consistency.h).
  void CheckConsistency(const std::optional<CartonConfig>& config,
                        const ConfigParseDetails& details) {
    ZipFiles files(*this);
    std::vector<VerifyProblem> problems;
    auto index = internal::CheckTensorData(files, limits_.tensor_data, &problems);
    if (config) internal::CheckReferences(*config, details, index, files, &problems);
    for (auto& p : problems) Problem(std::move(p.where), std::move(p.message));
  }

 private:
  // The MANIFEST entries whose zip data can be hashed, largest first.
  std::vector<const manifest::ManifestEntry*> HashableEntries(const manifest::Manifest& m) const {
    std::vector<const manifest::ManifestEntry*> present;
    for (const auto& me : m.entries()) {
      const ZipEntry* e = zip_.Find(me.path);
      // A symlink entry's data is the target's path; its MANIFEST line has
      // the target's sha256 (an entry rule), and the target is hashed.
      if (e != nullptr && !e->is_dir && !e->is_symlink && CompressionFromZipMethod(e->method) &&
          !e->encrypted) {
        present.push_back(&me);
      }
    }
    // Largest first so that both cores stay busy to the end.
    std::sort(present.begin(), present.end(), [&](auto* a, auto* b) {
      return zip_.Find(a->path)->size > zip_.Find(b->path)->size;
    });
    return present;
  }

  // Whether `e`'s bytes are read from the archive file as they are.
  bool ReadsStored(const ZipEntry& e) const {
    return zip_.file() != nullptr && e.method == 0 && !e.encrypted;
  }

  // The tasks for `present` (largest first): one per entry, and when there
  // are more threads than large entries, a second one per large stored
  // entry that checks its CRC-32 (reading its bytes again), after every
  // SHA-256 task. Sizes split_ to the entries split.
  std::vector<HashTask> PlanTasks(const std::vector<const manifest::ManifestEntry*>& present,
                                  unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    std::size_t large = 0;
    for (const auto* me : present) large += zip_.Find(me->path)->size >= kSplitMinSize;
    const bool spare = threads > large;
    std::vector<HashTask> tasks;
    std::vector<HashTask> crc_tasks;
    for (const auto* me : present) {
      const ZipEntry& e = *zip_.Find(me->path);
      if (spare && e.size >= kSplitMinSize && ReadsStored(e)) {
        tasks.push_back({me, HashTask::kSha256, crc_tasks.size()});
        crc_tasks.push_back({me, HashTask::kCrc32, crc_tasks.size()});
      } else {
        tasks.push_back({me, HashTask::kBoth, 0});
      }
    }
    split_.assign(crc_tasks.size(), SplitResult{});
    tasks.insert(tasks.end(), crc_tasks.begin(), crc_tasks.end());
    return tasks;
  }

  // Runs one task of PlanTasks, counting the bytes hashed. Thread-safe.
  void RunTask(const HashTask& t, const std::function<void(std::uint64_t)>& count) {
    const manifest::ManifestEntry& me = *t.entry;
    const ZipEntry& e = *zip_.Find(me.path);
    if (t.kind == HashTask::kBoth) {
      HashEntry(me, e, count);
      return;
    }
    const std::uint64_t offset = *zip_.DataOffset(me.path);
    SplitResult& r = split_[t.split];
    if (t.kind == HashTask::kSha256) {
      manifest::Sha256 h;
      r.read = ReadStored(*zip_.file(), offset, e.size, [&](ByteView piece) {
        h.Update(piece);
        count(piece.size());
      });
      r.digest = h.Finish();
      return;
    }
    std::uint32_t crc = 0;
    const Status s = ReadStored(*zip_.file(), offset, e.size,
                                [&](ByteView piece) { crc = UpdateCrc32(crc, piece); });
    r.crc = s.ok() ? ZipReader::CheckCrc32(e, crc) : s;
  }

  // Hashes one entry's data against its MANIFEST line, and checks a stored
  // entry's CRC-32 in the same pass. Thread-safe.
  void HashEntry(const manifest::ManifestEntry& me, const ZipEntry& e,
                 const std::function<void(std::uint64_t)>& count) {
    manifest::Sha256 h;
    Status s;
    Status crc_problem;
    if (ReadsStored(e)) {
      std::uint32_t crc = 0;
      s = ReadStored(*zip_.file(), *zip_.DataOffset(me.path), e.size, [&](ByteView piece) {
        crc = UpdateCrc32(crc, piece);
        h.Update(piece);
        count(piece.size());
      });
      crc_problem = ZipReader::CheckCrc32(e, crc);
    } else {
      // Decoding checks the CRC-32 itself.
      s = zip_.ReadTo(me.path, [&](ByteView chunk) {
        h.Update(chunk);
        count(chunk.size());
        return Status::Ok();
      });
    }
    Judge(me, s, s.ok() ? h.Finish() : manifest::Digest{}, crc_problem);
  }

  // A read error, else a sha256 mismatch, else a CRC-32 problem (reported
  // only when the sha256 matches) is the entry's problem.
  void Judge(const manifest::ManifestEntry& me, const Status& read, const manifest::Digest& d,
             const Status& crc) {
    if (!read.ok()) {
      Problem(me.path, read.message());
    } else if (d != me.sha256) {
      Problem(me.path, manifest::DigestMismatch(d, me.sha256));
    } else if (!crc.ok()) {
      Problem(me.path, crc.message());
    }
  }

  class ZipFiles : public internal::CartonFiles {
   public:
    explicit ZipFiles(const Checker& c) : c_(c) {}
    bool Present(const std::string& path) const override { return c_.Present(path); }
    std::optional<std::uint64_t> Size(const std::string& path) const override {
      const ZipEntry* e = c_.zip_.Find(path);
      if (e == nullptr || e->is_dir) return std::nullopt;
      return e->size;
    }
    Result<std::string> ReadText(const std::string& path, std::uint64_t limit) const override {
      return c_.reader_.ReadText(path, limit);
    }
    bool HasTensorFiles() const override {
      for (const auto& e : c_.zip_.entries()) {
        if (!e.is_dir && e.name.starts_with("tensor_data/") && e.name != "tensor_data/index.toml")
          return true;
      }
      return false;
    }

   private:
    const Checker& c_;
  };

  CartonReader& reader_;
  const ZipReader& zip_;
  const CartonLimits& limits_;
  VerifyReport* report_;
  std::mutex mu_;
  std::set<std::string> linked_;
  std::vector<SplitResult> split_;  // one per entry split by PlanTasks
};

}  // namespace

Result<VerifyReport> Verify(CartonSource& carton, const VerifyOptions& options) {
  VerifyReport report;
  auto reader = carton.Reader(ReadScope::kWhole);
  if (!reader.ok()) {
    const Status& s = reader.status();
    // A file that is there but is no carton is a problem; a download that
    // fails, a file that cannot be read at all, or a location this cannot
    // read (a directory) stops verification.
    if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kIoError ||
        s.code() == StatusCode::kNetworkError || s.code() == StatusCode::kInvalidArgument) {
      return s;
    }
    report.problems.push_back({"", s.message()});
    return report;
  }
  Checker check(**reader, &report);
  const manifest::Manifest* m = check.CheckStructure();
  ConfigParseDetails details;
  auto config = check.CheckConfig(&details);
  report.warnings = details.warnings;
  check.CheckConsistency(config, details);
  if (m) check.CheckHashes(*m, carton.environment().threads, options.progress);
  if (m && options.fetch_links) check.FetchLinked(carton.environment());
  return report;
}

}  // namespace carton

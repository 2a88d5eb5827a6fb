#include "carton/carton/verify.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>

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

// Each step of a mapping is checked in pieces this large, the CRC-32 first:
// it streams the piece into the cache, where SHA-256 then finds it, instead
// of stalling on every line of a cold page (docs/BENCHMARKS.md, "carton
// pack / verify").
constexpr std::size_t kCacheStep = std::size_t{256} << 10;

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

  void CheckHashes(const manifest::Manifest& m, unsigned threads, const ProgressFn& progress) {
    const std::vector<const manifest::ManifestEntry*> present = HashableEntries(m);
    std::atomic<std::uint64_t> bytes{0};
    std::uint64_t total = 0;
    for (const auto* me : present) total += zip_.Find(me->path)->size;
    const std::function<void(std::uint64_t)> count = [&](std::uint64_t n) {
      const std::uint64_t done = bytes += n;
      if (progress) progress(done, total);
    };
    ParallelFor(present.size(), threads, [&](std::size_t i) { HashEntry(*present[i], count); });
    report_->files_hashed = present.size();
    report_->bytes_hashed = bytes;
  }

  // Fetches each linked file through the blob cache (a cached copy is
  // rehashed; a download is hashed as it arrives).
  void FetchLinked(const LinkOptions& options) {
    for (const LinkedFile& f : reader_.linked_files()) {
      auto blob = ResolveLinkedFile(f, options, /*rehash=*/true);
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

  // Hashes one entry's data against its MANIFEST line, counting the bytes
  // read; a mismatch or unreadable data is a problem. Thread-safe.
  void HashEntry(const manifest::ManifestEntry& me,
                 const std::function<void(std::uint64_t)>& count) {
    manifest::Sha256 h;
    Status s;
    Status crc_problem;  // reported only when the sha256 matches
    auto mapped = zip_.MappedData(me.path);
    if (mapped.ok()) {
      // In steps that drop their pages afterwards, so that the resident
      // set stays small however large the archive. The CRC-32 is checked
      // too: unpack checks it, so verify must not pass an entry that
      // unpack refuses.
      std::uint32_t crc = 0;
      s = ForEachMappedStep(*mapped, [&](ByteView step) {
        for (std::size_t off = 0; off < step.size(); off += kCacheStep) {
          const ByteView piece = step.subspan(off, std::min(kCacheStep, step.size() - off));
          crc = UpdateCrc32(crc, piece);
          h.Update(piece);
        }
        count(step.size());
        return Status::Ok();
      });
      crc_problem = ZipReader::CheckCrc32(*zip_.Find(me.path), crc);
    } else {
      s = zip_.ReadTo(me.path, [&](ByteView chunk) {
        h.Update(chunk);
        count(chunk.size());
        return Status::Ok();
      });
    }
    if (!s.ok()) {
      Problem(me.path, s.message());
      return;
    }
    manifest::Digest d = h.Finish();
    if (d != me.sha256) {
      Problem(me.path, manifest::DigestMismatch(d, me.sha256));
    } else if (!crc_problem.ok()) {
      Problem(me.path, crc_problem.message());
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
};

}  // namespace

Result<VerifyReport> Verify(const Location& carton, const VerifyOptions& options) {
  VerifyReport report;
  std::error_code ec;
  const std::string temp_dir = std::filesystem::temp_directory_path(ec).string();
  auto reader = CartonReader::OpenLocal(carton, ec ? "." : temp_dir, options.links, options.limits);
  if (!reader.ok()) {
    const Status& s = reader.status();
    // A file that is there but is no carton is a problem; a download that
    // fails, or a file that cannot be read at all, stops verification.
    if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kIoError ||
        s.code() == StatusCode::kNetworkError) {
      return s;
    }
    report.problems.push_back({"", s.message()});
    return report;
  }
  Checker check(*reader, &report);
  const manifest::Manifest* m = check.CheckStructure();
  ConfigParseDetails details;
  auto config = check.CheckConfig(&details);
  report.warnings = details.warnings;
  check.CheckConsistency(config, details);
  if (m) check.CheckHashes(*m, options.threads, options.progress);
  if (m && options.fetch_links) check.FetchLinked(options.links);
  return report;
}

}  // namespace carton

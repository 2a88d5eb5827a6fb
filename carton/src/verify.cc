#include "carton/carton/verify.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
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

namespace carton {
namespace {

constexpr std::string_view kTensorDataPrefix = "@tensor_data/";
constexpr std::string_view kMiscPrefix = "@misc/";

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
    std::atomic<std::uint64_t> bytes{0};
    std::uint64_t total = 0;
    for (const auto* me : present) total += zip_.Find(me->path)->size;
    auto count = [&](std::uint64_t n) {
      const std::uint64_t done = bytes += n;
      if (progress) progress(done, total);
    };
    ParallelFor(present.size(), threads, [&](std::size_t i) {
      const auto& me = *present[i];
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
          h.Update(step);
          crc = UpdateCrc32(crc, step);
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
    });
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

  std::optional<CartonConfig> CheckConfig() {
    auto text = reader_.ReadText("carton.toml", limits_.config.max_size);
    if (!text.ok()) {
      Problem("carton.toml", text.status().code() == StatusCode::kNotFound
                                 ? "missing: every carton has a carton.toml"
                                 : text.status().message());
      return std::nullopt;
    }
    auto config = ParseConfig(*text, "carton.toml", limits_.config);
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

  std::optional<TensorDataIndex> CheckTensorData() {
    const std::string kIndex = "tensor_data/index.toml";
    bool any = false;
    for (const auto& e : zip_.entries()) {
      if (!e.is_dir && e.name.rfind("tensor_data/", 0) == 0 && e.name != kIndex) any = true;
    }
    if (!Present(kIndex)) {
      if (any) Problem(kIndex, "missing, but tensor_data/ holds other files");
      return std::nullopt;
    }
    if (zip_.Find(kIndex) == nullptr) return std::nullopt;  // linked; checked when fetched
    auto text = reader_.ReadText(kIndex, limits_.tensor_data.max_index_size);
    if (!text.ok()) {
      Problem(kIndex, text.status().message());
      return std::nullopt;
    }
    auto index = ParseIndex(*text, limits_.tensor_data);
    if (!index.ok()) {
      Problem(kIndex, index.status().message());
      return std::nullopt;
    }
    for (const auto& t : index->tensors) {
      if (t.nested()) continue;
      std::string path = "tensor_data/" + t.file;
      const ZipEntry* e = zip_.Find(path);
      if (e == nullptr) {
        if (!Present(path)) {
          Problem(path, "tensor \"" + t.name + "\" refers to it, but it is missing");
        }
        continue;
      }
      if (*t.dtype == DataType::kString) {
        auto bytes = reader_.ReadText(path, limits_.tensor_data.max_string_file_size);
        auto decoded = bytes.ok() ? DecodeTensor(t, AsBytes(*bytes), limits_.tensor_data)
                                  : Result<TensorValue>(bytes.status());
        if (!decoded.ok()) Problem(path, decoded.status().message());
        continue;
      }
      std::uint64_t numel = 1, need = 0;
      bool overflow = false;
      for (auto d : t.shape) overflow |= !CheckedMul(numel, d, &numel);
      overflow |= !CheckedMul(numel, DataTypeSize(*t.dtype), &need);
      if (overflow || e->size != need) {
        Problem(path, "tensor \"" + t.name + "\": " + std::to_string(e->size) + " bytes but " +
                          std::string(DataTypeName(*t.dtype)) + " of " + std::to_string(numel) +
                          " elements needs " +
                          (overflow ? std::string("more than 2^64") : std::to_string(need)));
      }
    }
    return std::move(index).value();
  }

  void CheckRef(const std::string& where, const std::string& ref, bool allow_misc,
                const std::optional<TensorDataIndex>& index) {
    std::string_view r = ref;
    if (r.rfind(kTensorDataPrefix, 0) == 0) {
      std::string name(r.substr(kTensorDataPrefix.size()));
      if (!index || index->Find(name) == nullptr) {
        Problem("carton.toml", where + ": " + ref + " names no tensor in tensor_data/index.toml");
      }
    } else if (allow_misc && r.rfind(kMiscPrefix, 0) == 0) {
      std::string path = "misc/" + std::string(r.substr(kMiscPrefix.size()));
      if (!Present(path)) Problem("carton.toml", where + ": " + ref + " names no file in misc/");
    }
  }

  void CheckNames(const std::string& where, const TensorRefs& refs,
                  const std::vector<TensorSpec>& declared, const char* what) {
    if (declared.empty()) return;
    for (const auto& ref : refs) {
      const std::string& name = ref.first;  // a lambda cannot capture a binding in clang 14
      bool found = std::any_of(declared.begin(), declared.end(),
                               [&](const TensorSpec& s) { return s.name == name; });
      if (!found) Problem("carton.toml", where + ": \"" + name + "\" is not a declared " + what);
    }
  }

  void CheckReferences(const CartonConfig& c, const std::optional<TensorDataIndex>& index) {
    for (std::size_t i = 0; i < c.self_tests.size(); ++i) {
      const auto& t = c.self_tests[i];
      std::string where = "self_test " + std::to_string(i + 1);
      for (const auto& [name, ref] : t.inputs) CheckRef(where, ref, false, index);
      CheckNames(where + " inputs", t.inputs, c.inputs, "input");
      if (t.expected_out) {
        for (const auto& [name, ref] : *t.expected_out) CheckRef(where, ref, false, index);
        CheckNames(where + " expected_out", *t.expected_out, c.outputs, "output");
      }
    }
    for (std::size_t i = 0; i < c.examples.size(); ++i) {
      const auto& e = c.examples[i];
      std::string where = "example " + std::to_string(i + 1);
      for (const auto& [name, ref] : e.inputs) CheckRef(where, ref, true, index);
      for (const auto& [name, ref] : e.sample_out) CheckRef(where, ref, true, index);
      CheckNames(where + " inputs", e.inputs, c.inputs, "input");
      CheckNames(where + " sample_out", e.sample_out, c.outputs, "output");
    }
  }

 private:
  CartonReader& reader_;
  const ZipReader& zip_;
  const CartonLimits& limits_;
  VerifyReport* report_;
  std::mutex mu_;
  std::set<std::string> linked_;
};

}  // namespace

Result<VerifyReport> Verify(const std::string& carton_path, const VerifyOptions& options) {
  VerifyReport report;
  std::error_code ec;
  const std::string temp_dir = std::filesystem::temp_directory_path(ec).string();
  auto reader =
      CartonReader::OpenLocal(carton_path, ec ? "." : temp_dir, options.links, options.limits);
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
  auto config = check.CheckConfig();
  auto index = check.CheckTensorData();
  if (config) check.CheckReferences(*config, index);
  if (m) check.CheckHashes(*m, options.threads, options.progress);
  if (m && options.fetch_links) check.FetchLinked(options.links);
  return report;
}

}  // namespace carton

#include "carton/carton/verify.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "archive.h"
#include "carton/carton/config.h"
#include "carton/carton/symlink.h"
#include "carton/carton/tensor_data.h"
#include "carton/carton/zip.h"
#include "carton/common/mapped_file.h"
#include "carton/common/parallel.h"
#include "carton/manifest/manifest.h"
#include "carton/manifest/sha256.h"
#include "zip_format.h"

namespace carton {
namespace {

constexpr std::string_view kTensorDataPrefix = "@tensor_data/";
constexpr std::string_view kMiscPrefix = "@misc/";

class Checker {
 public:
  Checker(const ZipReader& zip, const CartonLimits& limits, VerifyReport* report)
      : zip_(zip), limits_(limits), report_(report) {}

  void Problem(std::string where, std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    report_->problems.push_back({std::move(where), std::move(message)});
  }

  void CheckEntries() {
    for (const auto& e : zip_.entries()) {
      if (e.is_symlink) {
        auto target = ResolveSymlinkEntry(zip_, e);
        if (target.ok()) {
          symlink_targets_[e.name] = *target;
        } else {
          std::string message(target.status().message());
          if (message.rfind(e.name + ": ", 0) == 0) message.erase(0, e.name.size() + 2);
          Problem(e.name, std::move(message));
        }
      }
      if (e.encrypted) Problem(e.name, "encrypted entries are not allowed");
      if (!e.is_dir && !CompressionFromZipMethod(e.method)) {
        Problem(e.name, "compression method " + std::to_string(e.method) +
                            " is not stored, deflate or zstd");
      }
    }
  }

  // Reads LINKS (when there is one); a LINKS that does not parse is a
  // problem, and then covers no file.
  void CheckLinks() {
    const ZipEntry* e = zip_.Find("LINKS");
    if (e == nullptr) return;
    has_links_ = true;
    auto links = ReadLinks(zip_, limits_.links);
    if (!links.ok()) {
      // "LINKS: why" reads "LINKS: LINKS: why" after the entry name.
      std::string_view message = links.status().message();
      if (message.rfind("LINKS: ", 0) == 0) message.remove_prefix(7);
      Problem("LINKS", std::string(message));
      return;
    }
    links_ = std::move(links).value();
  }

  // Returns the manifest when MANIFEST is present and well-formed.
  std::optional<manifest::Manifest> CheckManifest() {
    auto text = internal::ReadTextEntry(zip_, "MANIFEST", limits_.max_manifest_size);
    if (!text.ok()) {
      Problem("MANIFEST", text.status().code() == StatusCode::kNotFound
                              ? "missing: every carton has a MANIFEST"
                              : text.status().message());
      return std::nullopt;
    }
    report_->manifest_hash = manifest::Sha256Of(AsBytes(*text));
    auto m = manifest::Manifest::Parse(AsBytes(*text));
    if (!m.ok()) {
      Problem("MANIFEST", m.status().message());
      return std::nullopt;
    }
    for (const auto& e : zip_.entries()) {
      if (e.is_dir || manifest::IsReservedPath(e.name)) continue;
      if (m->Find(e.name) == nullptr) Problem(e.name, "in the archive but not listed in MANIFEST");
    }
    for (const auto& me : m->entries()) {
      const ZipEntry* e = zip_.Find(me.path);
      if (e != nullptr && !e->is_dir) continue;
      // LINKS may name files that live elsewhere; without it the file is lost.
      const std::vector<std::string>* urls = nullptr;
      if (links_) {
        auto it = links_->urls.find(me.sha256);
        if (it != links_->urls.end()) urls = &it->second;
      }
      if (urls != nullptr) {
        linked_.insert(me.path);
        linked_files_.push_back({me.path, me.sha256, *urls});
      } else if (!has_links_) {
        Problem(me.path, "listed in MANIFEST but missing from the archive, and there is no LINKS");
      } else {
        Problem(me.path,
                "listed in MANIFEST but missing from the archive, and LINKS has no url "
                "for its sha256 " +
                    manifest::ToHex(me.sha256));
      }
    }
    report_->linked_files = linked_files_.size();
    // Every LINKS hash must name a MANIFEST file (FORMAT.md K3), as in
    // every other reader (LinkedFiles).
    if (links_) {
      std::set<manifest::Digest> listed;
      for (const auto& me : m->entries()) listed.insert(me.sha256);
      for (const auto& [digest, urls] : links_->urls) {
        if (listed.count(digest) == 0) {
          Problem("LINKS", StrayLinksHash(digest));
        }
      }
    }
    return std::move(m).value();
  }

  void CheckHashes(const manifest::Manifest& m, unsigned threads) {
    std::vector<const manifest::ManifestEntry*> present;
    for (const auto& me : m.entries()) {
      const ZipEntry* e = zip_.Find(me.path);
      if (e != nullptr && e->is_symlink) {
        // Its data is the target's path; its MANIFEST line has the
        // target's sha256, and the target is hashed below.
        auto t = symlink_targets_.find(me.path);
        const manifest::ManifestEntry* target =
            t == symlink_targets_.end() ? nullptr : m.Find(t->second);
        if (target != nullptr && target->sha256 != me.sha256) {
          Problem(me.path, "symlink has sha256 " + manifest::ToHex(me.sha256) +
                               " in MANIFEST but its target " + t->second + " has " +
                               manifest::ToHex(target->sha256));
        }
        continue;
      }
      if (e != nullptr && !e->is_dir && CompressionFromZipMethod(e->method) && !e->encrypted) {
        present.push_back(&me);
      }
    }
    // Largest first so that both cores stay busy to the end.
    std::sort(present.begin(), present.end(), [&](auto* a, auto* b) {
      return zip_.Find(a->path)->size > zip_.Find(b->path)->size;
    });
    std::atomic<std::uint64_t> bytes{0};
    ParallelFor(present.size(), threads, [&](std::size_t i) {
      const auto& me = *present[i];
      manifest::Sha256 h;
      Status s;
      std::string crc_problem;  // reported only when the sha256 matches
      auto mapped = zip_.MappedData(me.path);
      if (mapped.ok()) {
        // In steps, dropping each step's pages afterwards, so that the
        // resident set stays small however large the archive. The CRC-32 is
        // checked too: unpack checks it, so verify must not pass an entry
        // that unpack refuses.
        constexpr std::size_t kStep = 16 << 20;
        uLong crc = crc32_z(0, nullptr, 0);
        for (std::size_t off = 0; off < mapped->size(); off += kStep) {
          ByteView step = mapped->subspan(off, std::min(kStep, mapped->size() - off));
          h.Update(step);
          crc = crc32_z(crc, reinterpret_cast<const Bytef*>(step.data()), step.size());
          ReleaseMappedPages(step);
        }
        bytes += mapped->size();
        const std::uint32_t want = zip_.Find(me.path)->crc32;
        if (crc != want) {
          crc_problem = "entry " + zip_format::QuoteName(me.path) +
                        ": crc-32 mismatch: the directory says " + zip_format::Hex(want, 8) +
                        ", the data gives " + zip_format::Hex(crc, 8);
        }
      } else {
        s = zip_.ReadTo(me.path, [&](ByteView chunk) {
          h.Update(chunk);
          bytes += chunk.size();
          return Status::Ok();
        });
      }
      if (!s.ok()) {
        Problem(me.path, s.message());
        return;
      }
      manifest::Digest d = h.Finish();
      if (d != me.sha256) {
        Problem(me.path, "sha256 " + manifest::ToHex(d) + " but MANIFEST says " +
                             manifest::ToHex(me.sha256));
      } else if (!crc_problem.empty()) {
        Problem(me.path, crc_problem);
      }
    });
    report_->files_hashed = present.size();
    report_->bytes_hashed = bytes;
  }

  // Fetches each linked file through the blob cache (a cached copy is
  // rehashed; a download is hashed as it arrives).
  void FetchLinked(const LinkOptions& options) {
    for (const LinkedFile& f : linked_files_) {
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
    auto text = internal::ReadTextEntry(zip_, "carton.toml", limits_.config.max_size);
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
    auto text = internal::ReadTextEntry(zip_, kIndex, limits_.tensor_data.max_index_size);
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
        auto bytes = internal::ReadTextEntry(zip_, path, limits_.tensor_data.max_string_file_size);
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
  const ZipReader& zip_;
  const CartonLimits& limits_;
  VerifyReport* report_;
  std::mutex mu_;
  std::set<std::string> linked_;
  std::map<std::string, std::string> symlink_targets_;  // link -> target entry
  bool has_links_ = false;
  std::optional<links::Links> links_;
  std::vector<LinkedFile> linked_files_;
};

}  // namespace

Result<VerifyReport> Verify(const std::string& carton_path, const VerifyOptions& options) {
  VerifyReport report;
  std::error_code ec;
  const std::string temp_dir = std::filesystem::temp_directory_path(ec).string();
  CARTON_ASSIGN_OR_RETURN(LocalCarton local,
                          LocalCarton::Make(carton_path, ec ? "." : temp_dir, options.links));
  auto zip = ZipReader::Open(local.path(), options.limits.zip);
  if (!zip.ok()) {
    const Status& s = zip.status();
    if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kIoError) return s;
    // Name the URL, not the temporary download.
    std::string message = s.message();
    if (local.path() != carton_path && message.rfind(local.path(), 0) == 0) {
      message = carton_path + message.substr(local.path().size());
    }
    report.problems.push_back({"", std::move(message)});
    return report;
  }
  Checker check(*zip, options.limits, &report);
  check.CheckEntries();
  check.CheckLinks();
  auto m = check.CheckManifest();
  auto config = check.CheckConfig();
  auto index = check.CheckTensorData();
  if (config) check.CheckReferences(*config, index);
  if (m) check.CheckHashes(*m, options.threads);
  if (m && options.fetch_links) check.FetchLinked(options.links);
  return report;
}

}  // namespace carton

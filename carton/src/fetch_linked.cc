// FetchLinked: bringing a carton's linked files into its zip (links.h).
#include <filesystem>
#include <map>

#include "carton/carton/links.h"
#include "carton/carton/reader.h"
#include "carton/carton/writer_options.h"
#include "carton/common/atomic_file.h"
#include "carton/manifest/sha256.h"
#include "entry_copy.h"

namespace carton {
namespace {

// Cached blob paths by linked file path.
using BlobMap = std::map<std::string, std::string>;

// Fetches and verifies every linked file of `reader` through the blob cache.
Result<BlobMap> FetchBlobs(const CartonReader& reader, const Environment& environment,
                           const std::string& in) {
  BlobMap blobs;
  for (const LinkedFile& f : reader.linked_files()) {
    auto blob = ResolveLinkedFile(f, environment, /*rehash=*/true);
    if (!blob.ok()) return blob.status().WithContext(f.path).WithContext(in);
    blobs[f.path] = *blob;
  }
  return blobs;
}

// The bytes FetchLinked's progress counts: MANIFEST, every cached blob and
// every file the zip holds.
std::uint64_t ProgressTotal(const CartonReader& reader, const BlobMap& blobs) {
  const ManifestFile& m = reader.manifest_file();
  std::uint64_t total = m.text.size();
  for (const auto& me : m.manifest.entries()) {
    if (auto blob = blobs.find(me.path); blob != blobs.end()) {
      std::error_code ec;
      const auto size = std::filesystem::file_size(blob->second, ec);
      if (!ec) total += size;
    } else if (const ZipEntry* e = reader.zip().Find(me.path)) {
      total += e->size;
    }
  }
  return total;
}

// Adds the cached `blob` as file entry `me`, checking its sha256 again.
Status AddBlob(ZipWriter& writer, const manifest::ManifestEntry& me, const std::string& blob,
               Compression compression, FetchLinkedReport& report) {
  auto added =
      writer.AddFile(me.path, blob, compression, 0, ZipAddOptions{.sha256 = true, .observer = {}});
  if (!added.ok()) return added.status().WithContext(me.path);
  // The cached blob was verified; this catches it changing since.
  if (added->sha256 != me.sha256) {
    return Corrupt(blob + ": changed while it was copied (sha256 " +
                   manifest::ToHex(*added->sha256) + ", expected " + manifest::ToHex(me.sha256) +
                   ")");
  }
  report.fetched.push_back(me.path);
  report.fetched_bytes += added->size;
  return Status::Ok();
}

}  // namespace

Result<FetchLinkedReport> FetchLinked(CartonSource& source, const std::string& out_path,
                                      const FetchLinkedOptions& options) {
  const std::string& in = source.location().text();
  CARTON_RETURN_IF_ERROR(CheckOutputPath(out_path, "the .carton"));
  std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
  const std::string out_dir = parent.empty() ? "." : parent.string();
  CARTON_ASSIGN_OR_RETURN(CartonReader * opened, source.Reader(ReadScope::kWhole));
  CartonReader& reader = *opened;
  CARTON_RETURN_IF_ERROR(reader.Check());
  const ManifestFile& m = reader.manifest_file();

  // Every linked file is fetched and verified before anything is written.
  FetchLinkedReport report;
  CARTON_ASSIGN_OR_RETURN(const BlobMap blobs, FetchBlobs(reader, source.environment(), in));

  ZipWriterOptions writer_options = CartonWriterOptions(0);
  std::uint64_t total = ProgressTotal(reader, blobs), done = 0;
  if (options.progress) {
    writer_options.on_read = [&](std::uint64_t n) { options.progress(done += n, total); };
  }
  CARTON_ASSIGN_OR_RETURN(ZipWriter writer, ZipWriter::Create(out_path, writer_options));
  internal::EntryCopier copier(reader, writer, out_dir);
  for (const auto& me : m.manifest.entries()) {
    auto blob = blobs.find(me.path);
    if (blob == blobs.end()) {
      Status s = copier.Copy(me.path);
      if (!s.ok()) return s.WithContext(in);
      continue;
    }
    CARTON_RETURN_IF_ERROR(AddBlob(writer, me, blob->second, options.compression, report));
  }
  CARTON_RETURN_IF_ERROR(
      writer.AddBytes(std::string(manifest::kManifestPath), AsBytes(m.text), Compression::kStored)
          .status());
  CARTON_RETURN_IF_ERROR(writer.Finish());
  report.manifest_hash = m.hash;
  return report;
}

}  // namespace carton

// FetchLinked: bringing a carton's linked files into its zip (links.h).
#include <filesystem>
#include <map>

#include "carton/carton/links.h"
#include "carton/manifest/sha256.h"
#include "entry_copy.h"
#include "writer_options.h"

namespace carton {

Result<FetchLinkedReport> FetchLinked(const std::string& in, const std::string& out_path,
                                      const FetchLinkedOptions& options) {
  std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
  const std::string out_dir = parent.empty() ? "." : parent.string();
  CARTON_ASSIGN_OR_RETURN(LocalCarton local, LocalCarton::Make(in, out_dir, options.link));
  CARTON_ASSIGN_OR_RETURN(ZipReader zip, ZipReader::Open(local.path()));
  auto m = internal::ReadManifestForCopy(zip);
  if (!m.ok()) return m.status().WithContext(in);
  auto links = ReadLinks(zip);
  if (!links.ok()) return links.status().WithContext(in);
  auto linked = LinkedFiles(zip, m->manifest, *links);
  if (!linked.ok()) return linked.status().WithContext(in);

  // Every linked file is fetched and verified before anything is written.
  FetchLinkedReport report;
  std::map<std::string, std::string> blobs;  // path -> cached blob
  for (const LinkedFile& f : *linked) {
    auto blob = ResolveLinkedFile(f, options.link, /*rehash=*/true);
    if (!blob.ok()) return blob.status().WithContext(f.path).WithContext(in);
    blobs[f.path] = *blob;
  }

  CARTON_ASSIGN_OR_RETURN(ZipWriter writer,
                          ZipWriter::Create(out_path, internal::CartonWriterOptions(0)));
  internal::EntryCopier copier(zip, writer, out_dir);
  for (const auto& me : m->manifest.entries()) {
    auto blob = blobs.find(me.path);
    if (blob == blobs.end()) {
      Status s = copier.Copy(me.path, me.sha256);
      if (!s.ok()) return s.WithContext(in);
      continue;
    }
    auto added = writer.AddFile(me.path, blob->second, options.compression, 0,
                                ZipAddOptions{.sha256 = true, .observer = {}});
    if (!added.ok()) return added.status().WithContext(me.path);
    // The cached blob was verified; this catches it changing since.
    if (added->sha256 != me.sha256) {
      return Corrupt(blob->second + ": changed while it was copied (sha256 " +
                     manifest::ToHex(*added->sha256) + ", expected " + manifest::ToHex(me.sha256) +
                     ")");
    }
    report.fetched.push_back(me.path);
    report.fetched_bytes += added->size;
  }
  CARTON_RETURN_IF_ERROR(
      writer.AddBytes("MANIFEST", AsBytes(m->text), Compression::kStored).status());
  CARTON_RETURN_IF_ERROR(writer.Finish());
  report.manifest_hash = manifest::Sha256Of(AsBytes(m->text));
  return report;
}

}  // namespace carton

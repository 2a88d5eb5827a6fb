#include "check.h"

#include <set>
#include <string_view>

#include "carton/carton/limits.h"
#include "carton/oci/artifact.h"

namespace carton::oci {
namespace internal {

namespace {

// kCorrupt: the artifact `where` breaks a rule, `why`.
Status BadArtifact(const std::string& where, const std::string& why) {
  return Corrupt(where + ": " + why);
}

// Every MANIFEST file has its layer, with its digest; nothing else but
// MANIFEST and LINKS does.
Status CheckLayers(const OciArtifact& a, const manifest::Manifest& manifest,
                   const std::string& where) {
  for (const auto& me : manifest.entries()) {
    const OciLayer* l = a.Find(me.path);
    if (l == nullptr) return BadArtifact(where, me.path + ": listed in MANIFEST but has no layer");
    if (l->digest != me.sha256) {
      return BadArtifact(where, me.path + ": its layer has digest " + manifest::ToHex(l->digest) +
                                    " but MANIFEST says " + manifest::ToHex(me.sha256));
    }
  }
  for (const OciLayer& l : a.layers) {
    if (!manifest::IsReservedPath(l.title) && manifest.Find(l.title) == nullptr) {
      return BadArtifact(where, "layer " + l.title + " is not listed in MANIFEST");
    }
  }
  return Status::Ok();
}

// The config's zip entries are MANIFEST's files, MANIFEST itself and LINKS
// when there is a LINKS layer; symlinks name a file with the same sha256.
// Gathers the entries' names in `in_zip`.
Status CheckZipEntries(const OciArtifact& a, const OciLayout& layout,
                       const manifest::Manifest& manifest, const std::string& where,
                       std::set<std::string_view>* in_zip) {
  bool has_manifest_entry = false, has_links_entry = false;
  for (const auto& e : layout.entries) {
    in_zip->insert(e.name);
    if (e.kind == OciEntryKind::kDirectory) continue;
    if (e.name == "MANIFEST" || e.name == "LINKS") {
      if (e.kind != OciEntryKind::kFile)
        return BadArtifact(where, e.name + " must be a file entry");
      (e.name == "MANIFEST" ? has_manifest_entry : has_links_entry) = true;
      continue;
    }
    if (manifest.Find(e.name) == nullptr) {
      return BadArtifact(where, "the config's zip entry " + e.name + " is not listed in MANIFEST");
    }
    if (e.kind == OciEntryKind::kSymlink) {
      const manifest::ManifestEntry* t = manifest.Find(e.target);
      if (t == nullptr || t->sha256 != manifest.Find(e.name)->sha256) {
        return BadArtifact(where, "symlink " + e.name + " names " + e.target +
                                      ", which is not a MANIFEST file with the same sha256");
      }
    }
  }
  if (!has_manifest_entry) return BadArtifact(where, "the config's zip has no MANIFEST entry");
  if (has_links_entry != (a.Find("LINKS") != nullptr)) {
    return BadArtifact(where, "the config's zip and the layers disagree about LINKS");
  }
  return Status::Ok();
}

// The linked files are MANIFEST's, and each MANIFEST file is either one of
// the zip entries `in_zip` or linked.
Status CheckLinked(const OciLayout& layout, const manifest::Manifest& manifest,
                   const std::string& where, const std::set<std::string_view>& in_zip) {
  const std::set<std::string_view> linked(layout.linked.begin(), layout.linked.end());
  for (const std::string& path : layout.linked) {
    if (manifest.Find(path) == nullptr) {
      return BadArtifact(where, "linked file " + path + " is not in MANIFEST");
    }
  }
  for (const auto& me : manifest.entries()) {
    const bool zipped = in_zip.count(me.path) != 0;
    if (zipped == (linked.count(me.path) != 0)) {
      return BadArtifact(where,
                         me.path + (zipped ? ": both a zip entry and linked"
                                           : ": neither a zip entry nor linked in the config"));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckOciLayout(const OciArtifact& a, const OciLayout& layout,
                      const manifest::Manifest& manifest, const std::string& where) {
  if (layout.manifest_hash != a.manifest_hash) {
    return BadArtifact(where, "the config names manifest hash " +
                                  manifest::ToHex(layout.manifest_hash) +
                                  " but the MANIFEST layer is " + manifest::ToHex(a.manifest_hash));
  }
  CARTON_RETURN_IF_ERROR(CheckLayers(a, manifest, where));
  // The zip entries and the linked files are MANIFEST's files, each once,
  // plus MANIFEST itself and LINKS when there is a LINKS layer.
  std::set<std::string_view> in_zip;
  CARTON_RETURN_IF_ERROR(CheckZipEntries(a, layout, manifest, where, &in_zip));
  return CheckLinked(layout, manifest, where, in_zip);
}

}  // namespace internal

Status CheckOciArtifact(std::string_view image_manifest, std::string_view config,
                        std::string_view manifest_text, const std::string& where) {
  CARTON_ASSIGN_OR_RETURN(internal::OciArtifact artifact,
                          internal::ParseOciArtifact(image_manifest, where));
  if (artifact.foreign) {
    return Unsupported(where +
                       ": a ModelPack not written by carton: it has no carton documents to "
                       "check (pull imports it)");
  }
  auto layout = internal::ParseOciLayout(config);
  if (!layout.ok()) return layout.status().WithContext(where);
  if (manifest_text.size() > carton::kMaxManifestSize) {
    return Corrupt(where + ": MANIFEST: " + std::to_string(manifest_text.size()) +
                   " bytes, more than the limit of " + std::to_string(carton::kMaxManifestSize));
  }
  auto m = manifest::Manifest::Parse(AsBytes(manifest_text));
  if (!m.ok()) return m.status().WithContext(where);
  return internal::CheckOciLayout(artifact, *layout, *m, where);
}

}  // namespace carton::oci

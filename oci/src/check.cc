#include "check.h"

#include <set>
#include <string_view>

#include "carton/carton/limits.h"
#include "carton/oci/artifact.h"

namespace carton::oci {
namespace internal {

Status CheckOciLayout(const OciArtifact& a, const OciLayout& layout,
                      const manifest::Manifest& manifest, const std::string& where) {
  auto bad = [&](const std::string& why) { return Corrupt(where + ": " + why); };
  if (layout.manifest_hash != a.manifest_hash) {
    return bad("the config names manifest hash " + manifest::ToHex(layout.manifest_hash) +
               " but the MANIFEST layer is " + manifest::ToHex(a.manifest_hash));
  }
  // Every MANIFEST file has its layer, with its digest; nothing else but
  // MANIFEST and LINKS does.
  for (const auto& me : manifest.entries()) {
    const OciLayer* l = a.Find(me.path);
    if (l == nullptr) return bad(me.path + ": listed in MANIFEST but has no layer");
    if (l->digest != me.sha256) {
      return bad(me.path + ": its layer has digest " + manifest::ToHex(l->digest) +
                 " but MANIFEST says " + manifest::ToHex(me.sha256));
    }
  }
  for (const OciLayer& l : a.layers) {
    if (!manifest::IsReservedPath(l.title) && manifest.Find(l.title) == nullptr) {
      return bad("layer " + l.title + " is not listed in MANIFEST");
    }
  }
  // The zip entries and the linked files are MANIFEST's files, each once,
  // plus MANIFEST itself and LINKS when there is a LINKS layer.
  std::set<std::string_view> in_zip;
  bool has_manifest_entry = false, has_links_entry = false;
  for (const auto& e : layout.entries) {
    in_zip.insert(e.name);
    if (e.kind == OciEntryKind::kDirectory) continue;
    if (e.name == "MANIFEST" || e.name == "LINKS") {
      if (e.kind != OciEntryKind::kFile) return bad(e.name + " must be a file entry");
      (e.name == "MANIFEST" ? has_manifest_entry : has_links_entry) = true;
      continue;
    }
    if (manifest.Find(e.name) == nullptr) {
      return bad("the config's zip entry " + e.name + " is not listed in MANIFEST");
    }
    if (e.kind == OciEntryKind::kSymlink) {
      const manifest::ManifestEntry* t = manifest.Find(e.target);
      if (t == nullptr || t->sha256 != manifest.Find(e.name)->sha256) {
        return bad("symlink " + e.name + " names " + e.target +
                   ", which is not a MANIFEST file with the same sha256");
      }
    }
  }
  if (!has_manifest_entry) return bad("the config's zip has no MANIFEST entry");
  if (has_links_entry != (a.Find("LINKS") != nullptr)) {
    return bad("the config's zip and the layers disagree about LINKS");
  }
  const std::set<std::string_view> linked(layout.linked.begin(), layout.linked.end());
  for (const std::string& path : layout.linked) {
    if (manifest.Find(path) == nullptr) return bad("linked file " + path + " is not in MANIFEST");
  }
  for (const auto& me : manifest.entries()) {
    const bool zipped = in_zip.count(me.path) != 0;
    if (zipped == (linked.count(me.path) != 0)) {
      return bad(me.path + (zipped ? ": both a zip entry and linked"
                                   : ": neither a zip entry nor linked in the config"));
    }
  }
  return Status::Ok();
}

}  // namespace internal

Status CheckOciArtifact(std::string_view image_manifest, std::string_view config,
                        std::string_view manifest_text, const std::string& where) {
  CARTON_ASSIGN_OR_RETURN(internal::OciArtifact artifact,
                          internal::ParseOciArtifact(image_manifest, where));
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

// carton pull, and reading a carton's metadata from a registry (carton/
// FORMAT.md "OCI artifacts"). Everything the registry sends is untrusted:
// the manifest and config are checked against each other and against
// MANIFEST before any file is written, and every blob against its digest.
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "carton/carton/links.h"
#include "carton/carton/oci.h"
#include "carton/common/atomic_file.h"
#include "carton/common/parallel.h"
#include "carton/common/temporaries.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "oci_artifact.h"
#include "oci_layout.h"
#include "oci_session.h"
#include "writer_options.h"

namespace carton {
namespace {

namespace fs = std::filesystem;
using internal::OciSession;

// A carton in a registry, its manifest and config checked.
struct Pulled {
  OciSession session;
  manifest::Digest manifest_digest{};
  internal::OciArtifact artifact;
  internal::OciLayout layout;
  manifest::Manifest manifest;
  std::string config_path;  // the config blob in the cache
};

Result<std::string> ReadSmallBlob(const OciSession& s, const manifest::Digest& digest,
                                  std::uint64_t size, std::uint64_t limit,
                                  const std::string& what) {
  if (size > limit) {
    return Corrupt(s.where + ": " + what + ": " + std::to_string(size) +
                   " bytes, more than the limit of " + std::to_string(limit));
  }
  CARTON_ASSIGN_OR_RETURN(std::string path,
                          s.client->FetchBlob(s.cache, s.ref.repository, digest, size));
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return std::string(AsChars(bytes));
}

// Resolves the reference to its OCI manifest, checked to be a carton's.
Result<Pulled> OpenArtifact(const std::string& reference, const OciOptions& options) {
  Pulled p;
  CARTON_ASSIGN_OR_RETURN(p.session, internal::OpenOciSession(reference, options));
  const OciSession& s = p.session;
  auto m = s.client->GetManifest(s.ref.repository, s.ref.Target());
  if (!m.ok()) return m.status().WithContext(s.where);
  p.manifest_digest = m->digest;
  CARTON_ASSIGN_OR_RETURN(p.artifact, internal::ParseOciArtifact(m->bytes, s.where));
  return p;
}

// Fetches the config and MANIFEST and checks them against each other and
// the layers.
Status LoadLayout(Pulled& p, const CartonLimits& limits = {}) {
  const OciSession& s = p.session;
  const internal::OciArtifact& a = p.artifact;
  auto bad = [&](const std::string& why) { return Corrupt(s.where + ": " + why); };
  CARTON_ASSIGN_OR_RETURN(
      std::string config,
      ReadSmallBlob(s, a.config_digest, a.config_size, internal::kMaxOciLayoutSize, "config blob"));
  auto layout = internal::ParseOciLayout(config);
  if (!layout.ok()) return layout.status().WithContext(s.where);
  p.layout = std::move(layout).value();
  if (p.layout.manifest_hash != a.manifest_hash) {
    return bad("the config names manifest hash " + manifest::ToHex(p.layout.manifest_hash) +
               " but the MANIFEST layer is " + manifest::ToHex(a.manifest_hash));
  }
  const internal::OciLayer* ml = a.Find("MANIFEST");
  CARTON_ASSIGN_OR_RETURN(std::string text, ReadSmallBlob(s, ml->digest, ml->size,
                                                          limits.max_manifest_size, "MANIFEST"));
  auto m = manifest::Manifest::Parse(AsBytes(text));
  if (!m.ok()) return m.status().WithContext(s.where);
  p.manifest = std::move(m).value();

  // Every MANIFEST file has its layer, with its digest; nothing else but
  // MANIFEST and LINKS does.
  for (const auto& me : p.manifest.entries()) {
    const internal::OciLayer* l = a.Find(me.path);
    if (l == nullptr) return bad(me.path + ": listed in MANIFEST but has no layer");
    if (l->digest != me.sha256) {
      return bad(me.path + ": its layer has digest " + manifest::ToHex(l->digest) +
                 " but MANIFEST says " + manifest::ToHex(me.sha256));
    }
  }
  for (const internal::OciLayer& l : a.layers) {
    if (!manifest::IsReservedPath(l.title) && p.manifest.Find(l.title) == nullptr) {
      return bad("layer " + l.title + " is not listed in MANIFEST");
    }
  }
  // The zip entries and the linked files are MANIFEST's files, each once,
  // plus MANIFEST itself and LINKS when there is a LINKS layer.
  std::map<std::string, const internal::OciZipEntry*> entries;
  bool has_manifest_entry = false, has_links_entry = false;
  for (const auto& e : p.layout.entries) {
    entries[e.name] = &e;
    if (e.kind == internal::OciEntryKind::kDirectory) continue;
    if (e.name == "MANIFEST" || e.name == "LINKS") {
      if (e.kind != internal::OciEntryKind::kFile) return bad(e.name + " must be a file entry");
      (e.name == "MANIFEST" ? has_manifest_entry : has_links_entry) = true;
      continue;
    }
    if (p.manifest.Find(e.name) == nullptr) {
      return bad("the config's zip entry " + e.name + " is not listed in MANIFEST");
    }
    if (e.kind == internal::OciEntryKind::kSymlink) {
      const manifest::ManifestEntry* t = p.manifest.Find(e.target);
      if (t == nullptr || t->sha256 != p.manifest.Find(e.name)->sha256) {
        return bad("symlink " + e.name + " names " + e.target +
                   ", which is not a MANIFEST file with the same sha256");
      }
    }
  }
  if (!has_manifest_entry) return bad("the config's zip has no MANIFEST entry");
  if (has_links_entry != (a.Find("LINKS") != nullptr)) {
    return bad("the config's zip and the layers disagree about LINKS");
  }
  for (const std::string& path : p.layout.linked) {
    if (p.manifest.Find(path) == nullptr) return bad("linked file " + path + " is not in MANIFEST");
  }
  for (const auto& me : p.manifest.entries()) {
    const bool in_zip = entries.count(me.path) != 0;
    const bool is_linked =
        std::find(p.layout.linked.begin(), p.layout.linked.end(), me.path) != p.layout.linked.end();
    if (in_zip == is_linked) {
      return bad(me.path + (in_zip ? ": both a zip entry and linked"
                                   : ": neither a zip entry nor linked in the config"));
    }
  }
  return Status::Ok();
}

// The blob cache path of every distinct blob of the artifact, fetched with
// `jobs` transfers at once.
Result<std::map<manifest::Digest, std::string>> FetchAll(
    const Pulled& p, unsigned jobs, const std::set<manifest::Digest>& was_cached,
    OciPullReport* report) {
  const OciSession& s = p.session;
  std::map<manifest::Digest, const internal::OciLayer*> unique;
  for (const internal::OciLayer& l : p.artifact.layers) unique.emplace(l.digest, &l);
  std::vector<const internal::OciLayer*> todo;
  for (const auto& [digest, layer] : unique) todo.push_back(layer);
  std::vector<Result<std::string>> paths(todo.size(), Status(Internal("not fetched")));
  ParallelFor(todo.size(), jobs, [&](std::size_t i) {
    const internal::OciLayer& l = *todo[i];
    paths[i] = s.client->FetchBlob(s.cache, s.ref.repository, l.digest, l.size);
  });
  std::map<manifest::Digest, std::string> out;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (!paths[i].ok()) return paths[i].status().WithContext(s.where + ": " + todo[i]->title);
    out[todo[i]->digest] = *paths[i];
    const bool cached = was_cached.count(todo[i]->digest) != 0;
    report->blobs.push_back(
        {todo[i]->title, todo[i]->digest, todo[i]->size, cached ? "cached" : "downloaded"});
    if (!cached) report->bytes_downloaded += todo[i]->size;
  }
  return out;
}

std::string TempName(const std::string& out_path) {
  const fs::path p(out_path);
  std::random_device rd;
  return (p.parent_path() / ("." + p.filename().string() + ".pull-" + std::to_string(rd())))
      .string();
}

}  // namespace

Result<OciResolved> ResolveOciCarton(const std::string& reference, const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, options));
  return OciResolved{p.session.where, p.manifest_digest, p.artifact.manifest_hash};
}

Result<manifest::Digest> OciManifestHash(const std::string& reference, const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, options));
  const internal::OciLayer* ml = p.artifact.Find("MANIFEST");
  CARTON_ASSIGN_OR_RETURN(std::string text, ReadSmallBlob(p.session, ml->digest, ml->size,
                                                          kMaxManifestSize, "MANIFEST"));
  auto m = manifest::Manifest::Parse(AsBytes(text));
  if (!m.ok()) return m.status().WithContext(p.session.where);
  return p.artifact.manifest_hash;
}

Result<CartonInfo> ReadOciInfo(const std::string& reference, const OciOptions& options,
                               const CartonLimits& limits) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, options));
  CARTON_RETURN_IF_ERROR(LoadLayout(p, limits));
  const OciSession& s = p.session;
  auto text_of = [&](const std::string& path, std::uint64_t limit) -> Result<std::string> {
    const internal::OciLayer* l = p.artifact.Find(path);
    if (l == nullptr) return NotFound(s.where + ": " + path + ": missing");
    return ReadSmallBlob(s, l->digest, l->size, limit, path);
  };
  CartonInfo info;
  info.manifest_hash = p.artifact.manifest_hash;
  info.has_links = p.artifact.Find("LINKS") != nullptr;
  if (info.has_links) {
    CARTON_ASSIGN_OR_RETURN(std::string text, text_of("LINKS", limits.links.max_size));
    auto parsed = links::ParseLinks(text, limits.links);
    if (!parsed.ok()) return parsed.status().WithContext(s.where);
  }
  auto config_text = text_of("carton.toml", limits.config.max_size);
  if (!config_text.ok()) {
    if (config_text.status().code() == StatusCode::kNotFound) {
      return Corrupt(s.where + ": carton.toml: missing");
    }
    return config_text.status();
  }
  auto config = ParseConfig(*config_text, "carton.toml", limits.config);
  if (!config.ok()) return config.status().WithContext(s.where);
  info.config = std::move(config).value();
  if (p.manifest.Find("tensor_data/index.toml") != nullptr) {
    CARTON_ASSIGN_OR_RETURN(std::string text,
                            text_of("tensor_data/index.toml", limits.tensor_data.max_index_size));
    auto index = ParseIndex(text, limits.tensor_data);
    if (!index.ok()) return index.status().WithContext(s.where);
    info.tensor_index = std::move(index).value();
  }
  for (const auto& me : p.manifest.entries()) {
    CartonFileInfo f;
    f.path = me.path;
    f.size = p.artifact.Find(me.path)->size;
    const internal::OciZipEntry* e = nullptr;
    for (const auto& z : p.layout.entries) {
      if (z.name == me.path) e = &z;
    }
    if (e == nullptr) {
      f.linked = true;
      f.method = "linked";
    } else {
      f.method = std::string(CompressionName(e->method));
      f.compressed_size = e->compressed_size;
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

Result<OciPullReport> PullCarton(const std::string& reference, const std::string& out_path,
                                 const OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(Pulled p, OpenArtifact(reference, options));
  const OciSession& s = p.session;
  // What the cache holds before this pull, for the report.
  std::set<manifest::Digest> was_cached;
  if (s.cache.Get(p.artifact.config_digest).ok()) {
    was_cached.insert(p.artifact.config_digest);
  }
  for (const internal::OciLayer& l : p.artifact.layers) {
    if (s.cache.Get(l.digest).ok()) was_cached.insert(l.digest);
  }
  CARTON_RETURN_IF_ERROR(LoadLayout(p));
  OciPullReport report;
  report.reference = s.where;
  report.manifest_digest = p.manifest_digest;
  report.manifest_hash = p.artifact.manifest_hash;
  const bool config_cached = was_cached.count(p.artifact.config_digest) != 0;
  report.blobs.push_back({"(config)", p.artifact.config_digest, p.artifact.config_size,
                          config_cached ? "cached" : "downloaded"});
  if (!config_cached) report.bytes_downloaded += p.artifact.config_size;
  CARTON_ASSIGN_OR_RETURN(auto blobs, FetchAll(p, options.jobs, was_cached, &report));

  // The rebuild: the recorded entries, in order, with the recorded
  // settings, each file's bytes from its blob.
  ZipWriterOptions zip_options = internal::CartonWriterOptions(options.threads, p.layout.alignment);
  if (!p.layout.zstd_multithreaded) zip_options.zstd_workers = 0;
  const std::string temp = TempName(out_path);
  // Between Finish() and the rename the rebuilt carton is a plain file: an
  // interrupt removes it too.
  const TemporaryPath registration(temp, TemporaryKind::kFile);
  CARTON_ASSIGN_OR_RETURN(ZipWriter zip, ZipWriter::Create(temp, zip_options));
  std::string differs;  // the first entry that came out unlike the pushed one
  for (const auto& e : p.layout.entries) {
    if (e.kind == internal::OciEntryKind::kDirectory) {
      CARTON_RETURN_IF_ERROR(zip.AddDirectory(e.name));
      continue;
    }
    const std::string source = e.kind == internal::OciEntryKind::kSymlink ? e.target : e.name;
    const internal::OciLayer* layer = p.artifact.Find(source);
    const std::string& blob = blobs.at(layer->digest);
    Result<ZipAddResult> added = e.method == Compression::kStored
                                     ? zip.AddFileUnread(e.name, blob)
                                     : zip.AddFile(e.name, blob, e.method, e.level);
    if (!added.ok()) return added.status().WithContext(s.where + ": rebuilding " + out_path);
    if (differs.empty() && added->compressed_size != e.compressed_size) {
      differs = e.name + " came out " + std::to_string(added->compressed_size) +
                " bytes long, the pushed carton had " + std::to_string(e.compressed_size);
    }
  }
  if (Status st = zip.Finish(); !st.ok()) {
    return st.WithContext(s.where + ": rebuilding " + out_path);
  }
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove(temp, ec);
  };

  if (!p.layout.layout_sha256) {
    report.not_identical_reason =
        "the pushed carton was not written by carton's zip writer (the same manifest hash is "
        "the guarantee)";
  } else if (!differs.empty()) {
    report.not_identical_reason = differs;
  } else {
    auto rebuilt = ZipReader::Open(temp);
    if (!rebuilt.ok()) {
      cleanup();
      return rebuilt.status().WithContext(s.where + ": the rebuilt carton");
    }
    auto hash = internal::LayoutSha256(*rebuilt);
    if (!hash.ok()) {
      cleanup();
      return hash.status();
    }
    std::error_code ec;
    const auto size = fs::file_size(temp, ec);
    if (*hash == *p.layout.layout_sha256 && !ec && size == p.layout.size) {
      report.byte_identical = true;
    } else {
      report.not_identical_reason =
          "the rebuilt carton's layout differs from the pushed one (another zip or zstd "
          "version?)";
    }
  }
  std::error_code ec;
  fs::rename(temp, out_path, ec);
  if (ec) {
    cleanup();
    return IoError(out_path + ": cannot rename the rebuilt carton into place: " + ec.message());
  }
  return report;
}

Result<VerifyReport> VerifyOciCarton(const std::string& reference, const VerifyOptions& verify,
                                     const OciOptions& options) {
  std::string root = options.cache_dir;
  if (root.empty()) {
    CARTON_ASSIGN_OR_RETURN(root, links::DefaultCacheDir());
  }
  std::error_code ec;
  fs::create_directories(root + "/downloads", ec);
  if (ec) return IoError(root + "/downloads: cannot create: " + ec.message());
  std::random_device rd;
  const std::string temp = root + "/downloads/oci-verify-" + std::to_string(rd()) + ".carton";
  const TemporaryPath registration(temp, TemporaryKind::kFile);
  OciOptions o = options;
  o.cache_dir = root;
  auto pulled = PullCarton(reference, temp, o);
  if (!pulled.ok()) return pulled.status();
  auto report = Verify(temp, verify);
  fs::remove(temp, ec);
  return report;
}

}  // namespace carton

// Importing a ModelPack carton did not write (oci/FORMAT.md "Importing a
// ModelPack"): the layers are fetched into the blob cache, unpacked into a
// temporary directory beside the output as model/<path>, each checked
// against its DiffID, and packed with carton.toml from the config's
// descriptor. The manifest and config are read in import_plan.cc.
#include "import.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "carton/carton/pack.h"
#include "carton/common/parallel.h"
#include "carton/common/posix_error.h"
#include "carton/common/temporaries.h"
#include "carton/common/unique_fd.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/layout.h"
#include "carton/zip/reader.h"
#include "import_plan.h"
#include "layer_stream.h"
#include "tar.h"

namespace carton::oci::internal {
namespace {

namespace fs = std::filesystem;

// The zip entry rules for model/<path>, and no name that Pack leaves out.
Status CheckPath(const std::string& path, const std::string& where) {
  Status s = manifest::ValidateEntryPath(path);
  if (s.ok()) s = manifest::ValidateEntryPath("model/" + path);
  if (!s.ok()) return Corrupt(where + ": " + s.message());
  for (std::string_view left = path; !left.empty();) {
    const std::size_t slash = left.find('/');
    const std::string_view name = left.substr(0, slash);
    if (name == ".git" || name == "__pycache__" || name == ".DS_Store") {
      return Unsupported(where + ": " + QuoteZipEntryName(path) +
                         ": pack leaves out .git/, __pycache__/ and .DS_Store");
    }
    left = slash == std::string_view::npos ? std::string_view() : left.substr(slash + 1);
  }
  return Status::Ok();
}

// The model's files as they are unpacked: every path checked by the zip
// entry rules, once, never both a file and a directory, within the size
// limits.
class ModelTree {
 public:
  explicit ModelTree(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  const std::set<std::string>& files() const { return files_; }

  // A directory entry (and its parents).
  Status AddDirectory(const std::string& path, const std::string& where) {
    CARTON_RETURN_IF_ERROR(CheckPath(path, where));
    if (files_.contains(path)) return Repeats(path, where);
    CARTON_RETURN_IF_ERROR(ClaimParents(path, where));
    dirs_.insert(path);
    std::error_code ec;
    fs::create_directories(root_ + "/" + path, ec);
    if (ec) return IoError(root_ + "/" + path + ": cannot create: " + ec.message());
    return Status::Ok();
  }

  // Claims `path` for a file of `size` bytes and makes its directory;
  // returns where it goes. Errors: kCorrupt (a bad or repeated path, a
  // parent that is a file), kUnsupported (over the limits), kIoError.
  Result<std::string> ClaimFile(const std::string& path, std::uint64_t size,
                                const std::string& where) {
    CARTON_RETURN_IF_ERROR(CheckPath(path, where));
    if (files_.contains(path) || dirs_.contains(path)) return Repeats(path, where);
    if (files_.size() >= kZipMaxEntries) return Unsupported(where + ": too many files");
    if (size > kZipMaxTotalSize - total_) {
      return Unsupported(where + ": " + QuoteZipEntryName(path) + ": " + std::to_string(size) +
                         " bytes would take the model past the limit of " +
                         std::to_string(kZipMaxTotalSize) + " bytes");
    }
    CARTON_RETURN_IF_ERROR(ClaimParents(path, where));
    files_.insert(path);
    total_ += size;
    const std::string full = root_ + "/" + path;
    std::error_code ec;
    fs::create_directories(fs::path(full).parent_path(), ec);
    if (ec) return IoError(full + ": cannot create its directory: " + ec.message());
    return full;
  }

  // A new file of `size` bytes, open for writing. Errors: as ClaimFile.
  Result<UniqueFd> CreateFile(const std::string& path, std::uint64_t size,
                              const std::string& where) {
    CARTON_ASSIGN_OR_RETURN(const std::string full, ClaimFile(path, size, where));
    UniqueFd fd(::open(full.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd.valid()) return ErrnoIoError(errno, full + ": cannot create");
    return fd;
  }

 private:
  static Status Repeats(const std::string& path, const std::string& where) {
    return Corrupt(where + ": " + QuoteZipEntryName(path) +
                   " repeats (each path must appear once in the ModelPack)");
  }

  // Every parent of `path` is a directory, never a file.
  Status ClaimParents(const std::string& path, const std::string& where) {
    for (std::size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      const std::string parent = path.substr(0, slash);
      if (files_.contains(parent)) {
        return Corrupt(where + ": " + QuoteZipEntryName(path) + ": " + QuoteZipEntryName(parent) +
                       " is a file");
      }
      dirs_.insert(parent);
    }
    return Status::Ok();
  }

  const std::string root_;
  std::set<std::string> files_;
  std::set<std::string> dirs_;
  std::uint64_t total_ = 0;
};

Status WriteAll(int fd, ByteView bytes, const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoIoError(errno, what + ": cannot write");
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

// A raw layer: its blob is the file; hard-linked from the blob cache
// when it can be (Pack only reads it), else copied.
Status AddRawLayer(const ImportLayer& l, const std::string& blob, const std::string& where,
                   ModelTree* tree) {
  CARTON_ASSIGN_OR_RETURN(const std::string dest, tree->ClaimFile(l.path, l.size, where));
  std::error_code ec;
  fs::create_hard_link(blob, dest, ec);
  if (!ec) return Status::Ok();
  fs::copy_file(blob, dest, ec);
  if (ec) return IoError(dest + ": cannot copy the blob " + blob + ": " + ec.message());
  return Status::Ok();
}

// Decompressed bytes per compressed byte a tar layer may hold, beyond
// kZipRatioMinSize: the zip reader's limits for the same codecs.
std::uint64_t LayerBudget(const ImportLayer& l) {
  std::uint64_t ratio = 1;
  if (l.encoding == LayerEncoding::kTarGzip) ratio = kZipMaxDeflateRatio;
  if (l.encoding == LayerEncoding::kTarZstd) ratio = kZipMaxZstdRatio;
  const std::uint64_t cap = l.size > kZipMaxTotalSize / ratio ? kZipMaxTotalSize : l.size * ratio;
  return std::max(cap, kZipRatioMinSize);
}

// A tar layer: each regular file and directory, then the DiffID.
Status AddTarLayer(const ImportLayer& l, const std::string& blob, const std::string& where,
                   ModelTree* tree) {
  CARTON_ASSIGN_OR_RETURN(std::unique_ptr<LayerStream> stream,
                          LayerStream::Open(blob, CompressionOf(l.encoding), where));
  TarReader tar(stream.get(), where, kZipMaxTotalSize);
  std::uint64_t budget = LayerBudget(l);
  for (;;) {
    CARTON_ASSIGN_OR_RETURN(std::optional<TarEntry> entry, tar.Next());
    if (!entry) break;
    if (entry->directory) {
      if (!entry->name.empty()) CARTON_RETURN_IF_ERROR(tree->AddDirectory(entry->name, where));
      continue;
    }
    if (entry->size > budget) {
      return Unsupported(where + ": " + QuoteZipEntryName(entry->name) + ": " +
                         std::to_string(entry->size) +
                         " bytes, more than the layer's size allows (" + std::to_string(l.size) +
                         " compressed bytes)");
    }
    budget -= entry->size;
    CARTON_ASSIGN_OR_RETURN(UniqueFd fd, tree->CreateFile(entry->name, entry->size, where));
    const std::string what = where + ": " + QuoteZipEntryName(entry->name);
    CARTON_RETURN_IF_ERROR(tar.ReadData([&](ByteView b) { return WriteAll(fd.get(), b, what); }));
  }
  const manifest::Digest got = stream->FinishHash();
  if (got != l.diff_id) {
    return Corrupt(where + ": the uncompressed tar's sha256 is " + manifest::DigestString(got) +
                   ", but the config's modelfs.diffIds names " + manifest::DigestString(l.diff_id));
  }
  return Status::Ok();
}

// Fetches every distinct blob of the plan into the blob cache, `jobs` at
// once, each held in `uses` first.
Result<std::map<manifest::Digest, std::string>> FetchLayers(const OciSession& s,
                                                            const ImportPlan& plan, unsigned jobs,
                                                            links::BlobsInUse* uses,
                                                            OciPullReport* report) {
  std::map<manifest::Digest, const ImportLayer*> unique;
  for (const ImportLayer& l : plan.layers) unique.emplace(l.digest, &l);
  std::vector<const ImportLayer*> todo;
  std::vector<bool> cached;
  for (const auto& [digest, layer] : unique) {
    CARTON_RETURN_IF_ERROR(uses->Hold(digest).WithContext(s.where));
    todo.push_back(layer);
    cached.push_back(s.cache.Get(digest).ok());
  }
  std::vector<Result<std::string>> paths(todo.size(), Status(Internal("not fetched")));
  ParallelFor(todo.size(), jobs, [&](std::size_t i) {
    paths[i] = s.client->FetchBlob(s.cache, s.ref.repository, todo[i]->digest, todo[i]->size);
  });
  std::map<manifest::Digest, std::string> out;
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const ImportLayer& l = *todo[i];
    if (!paths[i].ok()) return paths[i].status().WithContext(s.where + ": " + l.at);
    out[l.digest] = *paths[i];
    report->blobs.push_back(
        {l.path.empty() ? l.at : l.path, l.digest, l.size, cached[i] ? "cached" : "downloaded"});
    if (!cached[i]) report->bytes_downloaded += l.size;
  }
  return out;
}

// A directory beside `out_path`, removed with everything in it when this
// goes out of scope (and by an interrupt).
class ImportDir {
 public:
  static Result<std::unique_ptr<ImportDir>> Create(const std::string& out_path) {
    const fs::path out(out_path);
    std::random_device rd;
    const std::string path =
        (out.parent_path() / ("." + out.filename().string() + ".import-" + std::to_string(rd())))
            .string();
    std::error_code ec;
    TemporaryPath reg = TemporaryPath::Create(path, TemporaryKind::kDirectory,
                                              [&] { return fs::create_directory(path, ec); });
    if (!reg.registered()) {
      return IoError(path + ": cannot create: " + (ec ? ec.message() : "it exists"));
    }
    return std::unique_ptr<ImportDir>(new ImportDir(path, std::move(reg)));
  }
  ~ImportDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ImportDir(const ImportDir&) = delete;
  ImportDir& operator=(const ImportDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  ImportDir(std::string path, TemporaryPath reg) : path_(std::move(path)), reg_(std::move(reg)) {}
  std::string path_;
  TemporaryPath reg_;
};

// Unpacks every layer, in order, into `tree`.
Status Unpack(const OciSession& s, const ImportPlan& plan,
              const std::map<manifest::Digest, std::string>& blobs, ModelTree* tree) {
  for (const ImportLayer& l : plan.layers) {
    const std::string where = s.where + ": " + l.at;
    const std::string& blob = blobs.at(l.digest);
    CARTON_RETURN_IF_ERROR(l.encoding == LayerEncoding::kRaw ? AddRawLayer(l, blob, where, tree)
                                                             : AddTarLayer(l, blob, where, tree));
  }
  if (tree->files().empty()) return Corrupt(s.where + ": the ModelPack holds no file");
  return Status::Ok();
}

}  // namespace

Result<OciPullReport> ImportModelPack(const OciSession& s, std::string_view manifest_json,
                                      const std::string& out_path, const OciOptions& options,
                                      links::BlobsInUse* uses) {
  CARTON_ASSIGN_OR_RETURN(ImportPlan plan, ParseImportManifest(manifest_json, s.where));
  OciPullReport report;
  report.reference = s.where;
  report.imported = true;
  CARTON_RETURN_IF_ERROR(ReadImportConfig(s, uses, &plan, &report));
  CARTON_ASSIGN_OR_RETURN(auto blobs, FetchLayers(s, plan, s.env.jobs, uses, &report));
  CARTON_ASSIGN_OR_RETURN(std::unique_ptr<ImportDir> dir, ImportDir::Create(out_path));
  ModelTree tree(dir->path() + "/model");
  CARTON_RETURN_IF_ERROR(Unpack(s, plan, blobs, &tree));
  PackDescription d;
  d.path = dir->path();
  d.config = ImportedConfig(plan, s.ref.repository, tree.files());
  d.config_use = PackConfigUse::kReplace;
  d.options.threads = s.env.threads;
  auto packed = Pack(d, out_path);
  if (!packed.ok()) return packed.status().WithContext(s.where + ": packing the imported model");
  report.manifest_hash = packed->manifest_hash;
  report.not_identical_reason =
      "imported from a ModelPack carton did not write: packed anew from its layers";
  return report;
}

}  // namespace carton::oci::internal

namespace carton::oci {
namespace {

// The regular files of the tar `stream` (layer `l`), read to the end as
// AddTarLayer reads them, keeping nothing: the same path, repeat and size
// rules.
Result<std::vector<ModelPackLayerFile>> ListTarLayer(const internal::ImportLayer& l,
                                                     internal::ByteSource* stream,
                                                     const std::string& where) {
  internal::TarReader tar(stream, where, kZipMaxTotalSize);
  std::uint64_t budget = internal::LayerBudget(l);
  std::set<std::string> seen;
  std::vector<ModelPackLayerFile> files;
  for (;;) {
    CARTON_ASSIGN_OR_RETURN(std::optional<internal::TarEntry> entry, tar.Next());
    if (!entry) break;
    if (entry->directory && entry->name.empty()) continue;
    CARTON_RETURN_IF_ERROR(internal::CheckPath(entry->name, where));
    if (!seen.insert(entry->name).second) {
      return Corrupt(where + ": " + QuoteZipEntryName(entry->name) + " repeats");
    }
    if (entry->directory) continue;
    if (entry->size > budget) {
      return Unsupported(where + ": " + QuoteZipEntryName(entry->name) +
                         ": more bytes than the layer's size allows");
    }
    budget -= entry->size;
    std::uint64_t read = 0;
    CARTON_RETURN_IF_ERROR(tar.ReadData([&](ByteView b) {
      read += b.size();
      return Status::Ok();
    }));
    if (read != entry->size) return Internal(where + ": the tar reader lost bytes");
    files.push_back({entry->name, entry->size});
  }
  return files;
}

}  // namespace

Result<std::vector<ModelPackLayerFile>> ReadModelPackTarLayer(std::string_view media_type,
                                                              ByteView layer,
                                                              const std::string& where) {
  using internal::LayerEncoding;
  const std::optional<LayerEncoding> encoding = internal::LayerEncodingOf(media_type);
  if (!encoding || *encoding == LayerEncoding::kRaw) {
    return InvalidArgument(where + ": " +
                           QuoteZipEntryName(std::string(media_type.substr(0, 200))) +
                           " is not a ModelPack tar layer type");
  }
  UniqueFd fd(::memfd_create("carton-layer", MFD_CLOEXEC));
  if (!fd.valid()) return ErrnoIoError(errno, where + ": memfd_create");
  CARTON_RETURN_IF_ERROR(internal::WriteAll(fd.get(), layer, where));
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return ErrnoIoError(errno, where + ": lseek");
  CARTON_ASSIGN_OR_RETURN(
      std::unique_ptr<internal::LayerStream> stream,
      internal::LayerStream::FromFd(std::move(fd), internal::CompressionOf(*encoding), where));
  internal::ImportLayer l;
  l.encoding = *encoding;
  l.size = layer.size();
  return ListTarLayer(l, stream.get(), where);
}

}  // namespace carton::oci

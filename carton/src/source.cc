// CartonSource (source.h): the base every kind shares, OpenSource, and the
// directory source.
#include "carton/carton/source.h"

#include <sys/stat.h>

#include <filesystem>
#include <utility>

#include "carton/carton/signature.h"
#include "carton/common/atomic_file.h"
#include "carton/sign/bundle.h"
#include "carton/zip/compression.h"
#include "sources.h"

namespace carton {

CartonSource::CartonSource(Location location, const Environment& environment, SourceOptions options)
    : location_(std::move(location)), environment_(environment), options_(std::move(options)) {}

CartonSource::~CartonSource() = default;

const std::string& CartonSource::directory() const {
  static const std::string kNone;
  return kNone;
}

Status CartonSource::Refuse(std::string_view what) const {
  const std::string operation =
      options_.operation.empty() ? "reading a .carton" : options_.operation;
  return location_.Refuse(operation, "a .carton file, an http(s) URL or an oci:// reference", what);
}

net::FetchOptions CartonSource::DownloadFetchOptions() const {
  net::FetchOptions fetch = environment_.network;
  fetch.progress_label = location_.text();
  if (options_.progress) fetch.progress = options_.progress;
  return fetch;
}

Result<manifest::Digest> CartonSource::ManifestHash() {
  CARTON_ASSIGN_OR_RETURN(auto manifest, Manifest());
  return manifest->hash;
}

Result<std::shared_ptr<const ManifestFile>> CartonSource::Manifest() {
  CARTON_ASSIGN_OR_RETURN(CartonReader * reader, Reader(ReadScope::kEntries));
  CARTON_RETURN_IF_ERROR(reader->ReadManifest().WithContext(location_.text()));
  return reader->shared_manifest();
}

Result<std::optional<KeptSignature>> CartonSource::Signature() {
  const std::string path = SignaturePath();
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::optional<KeptSignature>();
  if (!S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > sign::kMaxBundleBytes) {
    return Corrupt(path + ": " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                   std::to_string(sign::kMaxBundleBytes) + " for a signature");
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return std::optional<KeptSignature>(KeptSignature{path, std::string(AsChars(bytes))});
}

sign::TrustTarget CartonSource::TrustTarget() const {
  sign::TrustTarget t;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(location_.text(), ec);
  t.path = (ec ? std::filesystem::path(location_.text()) : abs).lexically_normal().string();
  while (t.path.size() > 1 && t.path.back() == '/') t.path.pop_back();
  return t;
}

Result<CartonInfo> CartonSource::Info() {
  CARTON_ASSIGN_OR_RETURN(CartonReader * reader, Reader(ReadScope::kEntries));
  CARTON_RETURN_IF_ERROR(reader->Check());
  return InfoOf(*reader);
}

CartonInfo InfoOf(const CartonReader& reader) {
  const ZipReader& zip = reader.zip();
  CartonInfo info;
  info.manifest_hash = reader.manifest_file().hash;
  info.has_links = zip.Find(manifest::kLinksPath) != nullptr;
  // Check() read and parsed carton.toml and index.toml.
  info.config = reader.config();
  info.tensor_index = reader.tensor_index();
  for (const auto& me : reader.manifest().entries()) {
    CartonFileInfo f;
    f.path = me.path;
    const ZipEntry* e = zip.Find(me.path);
    if (e == nullptr) {
      f.linked = true;
      f.method = "linked";
    } else {
      f.size = e->size;
      f.compressed_size = e->compressed_size;
      auto c = CompressionFromZipMethod(e->method);
      f.method = c ? std::string(CompressionName(*c)) : "method " + std::to_string(e->method);
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

std::shared_ptr<const SourceKinds> SourceKinds::With(std::shared_ptr<const SourceKinds> base,
                                                     Location::Kind kind, SourceFactory factory) {
  auto kinds = std::make_shared<SourceKinds>();
  if (base != nullptr) kinds->factories_ = base->factories_;
  std::erase_if(kinds->factories_, [&](const auto& f) { return f.first == kind; });
  kinds->factories_.emplace_back(kind, std::move(factory));
  return kinds;
}

const SourceFactory* SourceKinds::Find(Location::Kind kind) const {
  for (const auto& [k, factory] : factories_) {
    if (k == kind) return &factory;
  }
  return nullptr;
}

namespace {

// A directory: the loader loads it in place (directory()); every other
// operation refuses it by name.
class DirectorySource final : public CartonSource {
 public:
  DirectorySource(const Location& location, const Environment& environment,
                  const SourceOptions& options)
      : CartonSource(location, environment, options), dir_(location.text()) {}

  Result<manifest::Digest> ManifestHash() override { return Refuse("a directory"); }
  Result<CartonInfo> Info() override { return Refuse("a directory"); }
  Result<CartonReader*> Reader(ReadScope) override { return Refuse("a directory"); }
  const std::string& directory() const override { return dir_; }
  std::string SignaturePath() const override {
    return (std::filesystem::path(dir_) / kDirectorySignatureName).string();
  }

 private:
  std::string dir_;
};

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

namespace internal {

std::unique_ptr<CartonSource> MakeDirectorySource(const Location& location,
                                                  const Environment& environment,
                                                  const SourceOptions& options) {
  return std::make_unique<DirectorySource>(location, environment, options);
}

}  // namespace internal

Result<std::unique_ptr<CartonSource>> OpenSource(const Location& location,
                                                 const Environment& environment,
                                                 const SourceOptions& options) {
  CARTON_RETURN_IF_ERROR(location.status());
  switch (location.kind()) {
    case Location::Kind::kPath:
      if (IsDirectory(location.text())) {
        return internal::MakeDirectorySource(location, environment, options);
      }
      return internal::MakeFileSource(location, environment, options);
    case Location::Kind::kUrl:
      return internal::MakeUrlSource(location, environment, options);
    case Location::Kind::kOci:
      break;
  }
  const SourceFactory* factory =
      environment.sources != nullptr ? environment.sources->Find(location.kind()) : nullptr;
  if (factory == nullptr) {
    return InvalidArgument(location.text() + ": " + std::string(location.kind_name()) +
                           " needs its module's source in the Environment "
                           "(oci::AddOciSource, or loader::DefaultEnvironment())");
  }
  return (*factory)(location, environment, options);
}

}  // namespace carton

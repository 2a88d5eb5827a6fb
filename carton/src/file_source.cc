// The source of a .carton file (source.h): mapped once; its MANIFEST read
// first with pread through the end records and the central directory, so
// that a reader of the manifest hash (a load's cache hit) touches no other
// byte of the archive; the whole archive read through the same mapping.
#include <memory>
#include <optional>

#include "carton/carton/signature.h"
#include "carton/common/random_access.h"
#include "sources.h"

namespace carton::internal {
namespace {

class FileSource final : public CartonSource {
 public:
  FileSource(const Location& location, const Environment& environment, const SourceOptions& options,
             std::string path)
      : CartonSource(location, environment, options),
        path_(path.empty() ? location.text() : std::move(path)) {}

  Result<std::shared_ptr<const ManifestFile>> Manifest() override {
    if (reader_) return CartonSource::Manifest();
    CARTON_RETURN_IF_ERROR(Map());
    if (manifest_ == nullptr) {
      auto quick = CartonReader::OpenSource(FileSourceOf(file_), options().limits);
      // (Its messages would name the file: a quick read only decides a hit.)
      if (quick.ok() && quick->ReadManifest().ok()) manifest_ = quick->shared_manifest();
    }
    if (manifest_ != nullptr) return manifest_;
    // An archive the quick read cannot take is read whole, which names the
    // problem if there is one.
    return CartonSource::Manifest();
  }

  std::string SignaturePath() const override { return path_ + std::string(kSignatureSuffix); }

  Result<CartonReader*> Reader(ReadScope) override {
    if (reader_) return &*reader_;
    CARTON_RETURN_IF_ERROR(Map());
    CARTON_ASSIGN_OR_RETURN(
        CartonReader reader,
        CartonReader::OpenFile(file_, options().limits, manifest_, location().text()));
    reader_.emplace(std::move(reader));
    return &*reader_;
  }

  std::shared_ptr<const MappedFile> file() const override { return reader_ ? file_ : nullptr; }

 private:
  Status Map() {
    if (file_ != nullptr) return Status::Ok();
    auto file = MappedFile::Open(path_);
    if (!file.ok()) return Renamed(file.status());
    file_ = std::make_shared<const MappedFile>(std::move(file).value());
    return Status::Ok();
  }

  // A copy's errors name the carton, not the copy.
  Status Renamed(const Status& s) const {
    const std::string& m = s.message();
    if (path_ == location().text() || m.rfind(path_, 0) != 0) return s;
    return Status(s.code(), location().text() + m.substr(path_.size()), s.detail());
  }

  const std::string path_;
  std::shared_ptr<const MappedFile> file_;
  std::shared_ptr<const ManifestFile> manifest_;  // read by the quick read
  std::optional<CartonReader> reader_;
};

}  // namespace

std::unique_ptr<CartonSource> MakeFileSource(const Location& location,
                                             const Environment& environment,
                                             const SourceOptions& options, std::string path) {
  return std::make_unique<FileSource>(location, environment, options, std::move(path));
}

}  // namespace carton::internal

namespace carton {

std::unique_ptr<CartonSource> OpenFileCopy(const Location& named, std::string path,
                                           const Environment& environment,
                                           const SourceOptions& options) {
  return internal::MakeFileSource(named, environment, options, std::move(path));
}

}  // namespace carton

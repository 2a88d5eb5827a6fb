#include "carton/common/random_access.h"

namespace carton {
namespace {

// Reads through MappedFile::ReadAt (pread), so pages are copied, not mapped
// into the process.
class MappedFileSource final : public RandomAccessSource {
 public:
  explicit MappedFileSource(std::shared_ptr<const MappedFile> file) : file_(std::move(file)) {}
  std::uint64_t size() const override { return file_->size(); }
  const std::string& name() const override { return file_->path(); }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    return file_->ReadAt(offset, out);
  }

 private:
  std::shared_ptr<const MappedFile> file_;
};

}  // namespace

Result<std::unique_ptr<RandomAccessSource>> OpenFileSource(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return FileSourceOf(std::make_shared<const MappedFile>(std::move(file)));
}

std::unique_ptr<RandomAccessSource> FileSourceOf(std::shared_ptr<const MappedFile> file) {
  return std::make_unique<MappedFileSource>(std::move(file));
}

}  // namespace carton

#include "carton/common/random_access.h"

#include "carton/common/mapped_file.h"

namespace carton {
namespace {

// Reads through MappedFile::ReadAt (pread), so pages are copied, not mapped
// into the process.
class FileSource final : public RandomAccessSource {
 public:
  explicit FileSource(MappedFile file) : file_(std::move(file)) {}
  std::uint64_t size() const override { return file_.size(); }
  const std::string& name() const override { return file_.path(); }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    return file_.ReadAt(offset, out);
  }

 private:
  MappedFile file_;
};

}  // namespace

Result<std::unique_ptr<RandomAccessSource>> OpenFileSource(const std::string& path) {
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return std::unique_ptr<RandomAccessSource>(std::make_unique<FileSource>(std::move(file)));
}

}  // namespace carton

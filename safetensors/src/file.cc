#include "carton/safetensors/file.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "carton/common/mapped_file.h"
#include "carton/common/quote.h"
#include "header_parser.h"

namespace carton::safetensors {

struct File::Impl {
  std::string source;
  // At most one owner of the bytes (none when borrowing the caller's).
  std::optional<MappedFile> mapping;
  std::vector<std::byte> owned;  // the file (FromOwnedBuffer) or its header (OpenSource)
  std::shared_ptr<const RandomAccessSource> reader;  // OpenSource
  ByteView bytes;                                    // the whole file, when in memory
  std::uint64_t file_size = 0;
  internal::ParsedHeader header;
};

Result<File> File::Build(std::unique_ptr<Impl> impl, const ReaderOptions& options) {
  impl->file_size = impl->bytes.size();
  Status s = internal::ParseFile(impl->bytes, options, &impl->header);
  if (!s.ok()) return s.WithContext(impl->source);
  return File(std::move(impl));
}

File::File(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

Result<File> File::Open(const std::string& path, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  CARTON_ASSIGN_OR_RETURN(MappedFile m, MappedFile::Open(path));
  impl->mapping.emplace(std::move(m));
  impl->bytes = impl->mapping->bytes();
  return Build(std::move(impl), options);
}

Result<File> File::FromBuffer(ByteView bytes, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->source = "<buffer>";
  impl->bytes = bytes;
  return Build(std::move(impl), options);
}

Result<File> File::FromOwnedBuffer(std::vector<std::byte> bytes, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->source = "<buffer>";
  impl->owned = std::move(bytes);
  impl->bytes = impl->owned;
  return Build(std::move(impl), options);
}

Result<File> File::OpenSource(std::shared_ptr<const RandomAccessSource> source,
                              const ReaderOptions& options) {
  if (source == nullptr) return InvalidArgument("File::OpenSource: no source");
  auto impl = std::make_unique<Impl>();
  impl->source = source->name();
  impl->file_size = source->size();
  // The first read takes the length and, for most files, the whole header;
  // a longer header costs one more read, of exactly what is missing.
  std::vector<std::byte>& head = impl->owned;
  head.resize(static_cast<std::size_t>(std::min(impl->file_size, kHeaderProbeSize)));
  if (!head.empty()) CARTON_RETURN_IF_ERROR(source->ReadAt(0, head));
  auto n = internal::ParseHeaderLength(head, impl->file_size, options);
  if (!n.ok()) return n.status().WithContext(impl->source);
  const std::size_t header_end = static_cast<std::size_t>(8 + *n);
  const std::size_t have = head.size();
  head.resize(std::max(have, header_end + internal::kJsonPadding));
  if (header_end > have) {
    CARTON_RETURN_IF_ERROR(
        source->ReadAt(have, MutableByteView(head.data() + have, header_end - have)));
  }
  std::string_view json = AsChars(ByteView(head).subspan(8, static_cast<std::size_t>(*n)));
  Status s = internal::ParseHeaderJson(json, impl->file_size, head.size() - header_end, {}, options,
                                       &impl->header);
  if (!s.ok()) return s.WithContext(impl->source);
  impl->reader = std::move(source);
  return File(std::move(impl));
}

std::span<const TensorView> File::tensors() const { return impl_->header.tensors; }

std::vector<std::string_view> File::Names() const {
  std::vector<std::string_view> names;
  names.reserve(impl_->header.tensors.size());
  for (const auto& t : impl_->header.tensors) names.push_back(t.name);
  if (!impl_->header.names_sorted) std::sort(names.begin(), names.end());
  return names;
}

const TensorView* File::Find(std::string_view name) const { return impl_->header.Find(name); }

Result<TensorView> File::Get(std::string_view name) const {
  const TensorView* v = Find(name);
  if (v == nullptr) {
    return NotFound(impl_->source + ": no tensor named " + QuoteForMessage(name));
  }
  return *v;
}

const Metadata& File::metadata() const { return impl_->header.metadata; }
bool File::has_metadata() const { return impl_->header.has_metadata; }
std::uint64_t File::header_size() const { return impl_->header.header_size; }
std::uint64_t File::file_size() const { return impl_->file_size; }
bool File::data_in_memory() const { return impl_->reader == nullptr; }
ByteView File::bytes() const { return impl_->bytes; }
const std::string& File::source() const { return impl_->source; }

Status File::Read(std::uint64_t file_offset, MutableByteView out) const {
  if (impl_->reader) return impl_->reader->ReadAt(file_offset, out);
  if (impl_->mapping) return impl_->mapping->ReadAt(file_offset, out);
  if (!out.empty()) {
    std::memcpy(out.data(), impl_->bytes.data() + file_offset, out.size());
  }
  return Status::Ok();
}

Status File::ReadRange(const TensorView& tensor, std::uint64_t offset, MutableByteView out) const {
  // The file's own view decides the range. A view handed out by this File
  // (or a copy of one) borrows its name from it; one from another File
  // does not, even when names and offsets agree.
  const TensorView* mine = Find(tensor.name);
  if (mine == nullptr || mine->name.data() != tensor.name.data() ||
      mine->data_offset != tensor.data_offset) {
    return InvalidArgument("tensor " + QuoteForMessage(tensor.name) + " is not from " +
                           impl_->source);
  }
  const std::uint64_t size = mine->byte_size();
  if (!InBounds(offset, out.size(), size)) {
    return InvalidArgument("tensor " + QuoteForMessage(tensor.name) + ": " +
                           std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
                           " are outside its " + std::to_string(size) + " bytes");
  }
  if (out.empty()) return Status::Ok();
  return Read(data_start() + mine->data_offset + offset, out);
}

Status File::ReadInto(const TensorView& tensor, MutableByteView out) const {
  if (out.size() != tensor.byte_size()) {
    return InvalidArgument("tensor " + QuoteForMessage(tensor.name) + ": buffer of " +
                           std::to_string(out.size()) + " bytes for " +
                           std::to_string(tensor.byte_size()));
  }
  return ReadRange(tensor, 0, out);
}

Result<Tensor> File::ReadTensor(std::string_view name) const {
  CARTON_ASSIGN_OR_RETURN(TensorView v, Get(name));
  Tensor t;
  t.name = std::string(v.name);
  t.dtype = v.dtype;
  t.shape.assign(v.shape.begin(), v.shape.end());
  const std::uint64_t size = v.byte_size();
  try {
    if (size > t.data.max_size()) throw std::bad_alloc();
    t.data.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    return InvalidArgument(impl_->source + ": tensor " + QuoteForMessage(name) + ": cannot hold " +
                           std::to_string(size) + " bytes in memory");
  }
  CARTON_RETURN_IF_ERROR(ReadInto(v, t.data));
  return t;
}

Status File::Populate() const {
  if (!impl_->mapping) return Status::Ok();
  return impl_->mapping->Populate(data_start(), impl_->bytes.size() - data_start());
}

Status File::Populate(const TensorView& tensor) const {
  if (!impl_->mapping) return Status::Ok();
  return impl_->mapping->Populate(data_start() + tensor.data_offset, tensor.data.size());
}

}  // namespace carton::safetensors

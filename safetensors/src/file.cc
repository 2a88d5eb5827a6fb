#include "carton/safetensors/file.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <variant>

#include "carton/common/mapped_file.h"
#include "header_parser.h"

namespace carton::safetensors {

struct File::Impl {
  std::string source;
  // Exactly one owner of the bytes, or none when borrowing the caller's.
  std::optional<MappedFile> mapping;
  std::vector<std::byte> owned;
  ByteView bytes;

  internal::ParsedHeader header;
  std::vector<TensorView> views;  // offset order; header.by_name indexes it
};

Result<File> File::Build(std::unique_ptr<Impl> impl, const ReaderOptions& options) {
  auto parsed = internal::ParseHeader(impl->bytes, options);
  if (!parsed.ok()) return parsed.status().WithContext(impl->source);
  impl->header = std::move(parsed).value();
  const auto& h = impl->header;
  const std::uint64_t data_start = 8 + h.header_size;
  impl->views.reserve(h.tensors.size());
  for (const auto& t : h.tensors) {
    TensorView v;
    v.name = h.name(t);
    v.dtype = t.dtype;
    v.shape = std::span<const std::uint64_t>(h.dims.data() + t.shape_begin, t.rank);
    v.data = impl->bytes.subspan(data_start + t.begin, t.end - t.begin);
    v.data_offset = t.begin;
    impl->views.push_back(v);
  }
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

std::span<const TensorView> File::tensors() const { return impl_->views; }

std::vector<std::string_view> File::Names() const {
  std::vector<std::string_view> names;
  names.reserve(impl_->header.by_name.size());
  for (auto i : impl_->header.by_name) names.push_back(impl_->views[i].name);
  return names;
}

const TensorView* File::Find(std::string_view name) const {
  auto it = std::lower_bound(
      impl_->header.by_name.begin(), impl_->header.by_name.end(), name,
      [&](std::uint32_t i, std::string_view n) { return impl_->views[i].name < n; });
  if (it == impl_->header.by_name.end() || impl_->views[*it].name != name) return nullptr;
  return &impl_->views[*it];
}

Result<TensorView> File::Get(std::string_view name) const {
  const TensorView* v = Find(name);
  if (v == nullptr) {
    return NotFound(impl_->source + ": no tensor named \"" + std::string(name) + "\"");
  }
  return *v;
}

const Metadata& File::metadata() const { return impl_->header.metadata; }
bool File::has_metadata() const { return impl_->header.has_metadata; }
std::uint64_t File::header_size() const { return impl_->header.header_size; }
ByteView File::bytes() const { return impl_->bytes; }
const std::string& File::source() const { return impl_->source; }

Status File::ReadInto(const TensorView& tensor, MutableByteView out) const {
  if (out.size() != tensor.data.size()) {
    return InvalidArgument("tensor \"" + std::string(tensor.name) + "\": buffer of " +
                           std::to_string(out.size()) + " bytes for " +
                           std::to_string(tensor.data.size()));
  }
  if (tensor.data.data() < impl_->bytes.data() ||
      tensor.data.data() + tensor.data.size() > impl_->bytes.data() + impl_->bytes.size()) {
    return InvalidArgument("tensor \"" + std::string(tensor.name) + "\" is not from " +
                           impl_->source);
  }
  if (!impl_->mapping) {
    if (!out.empty()) std::memcpy(out.data(), tensor.data.data(), out.size());
    return Status::Ok();
  }
  return impl_->mapping->ReadAt(data_start() + tensor.data_offset, out);
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

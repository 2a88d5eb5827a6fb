#include "fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/info.h"
#include "carton/carton/source.h"
#include "carton/carton/verify.h"
#include "carton/common/bytes.h"
#include "carton/common/random_access.h"
#include "carton/common/unique_fd.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "carton/net/http_access.h"
#include "carton/oci/artifact.h"
#include "carton/oci/client.h"
#include "carton/safetensors/file.h"
#include "carton/safetensors/slice.h"
#include "carton/sign/bundle.h"
#include "carton/sign/verify.h"
#include "carton/zip/reader.h"

namespace carton::fuzz {
namespace {

// An invariant every input must keep; a failure is a finding.
#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

ByteView Bytes(Input data) {
  return {reinterpret_cast<const std::byte*>(data.data()), data.size()};
}
std::string_view Text(Input data) { return AsChars(Bytes(data)); }

bool IsLowercase(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

bool Within(ByteView inner, ByteView outer) {
  auto b = reinterpret_cast<std::uintptr_t>(outer.data());
  auto p = reinterpret_cast<std::uintptr_t>(inner.data());
  return inner.empty() || (p >= b && InBounds(p - b, inner.size(), outer.size()));
}

// The input as a RandomAccessSource, borrowing its bytes. Reads past the
// end fail, as a file's or a server's would.
class MemorySource final : public RandomAccessSource {
 public:
  explicit MemorySource(ByteView bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  Status ReadAt(std::uint64_t offset, MutableByteView out) const override {
    if (!InBounds(offset, out.size(), bytes_.size())) {
      return InvalidArgument("read of " + std::to_string(out.size()) + " bytes at " +
                             std::to_string(offset) + " past the end");
    }
    std::copy_n(bytes_.data() + offset, out.size(), out.data());
    return Status::Ok();
  }

 private:
  ByteView bytes_;
  std::string name_ = "memory";
};

// Every file entry's bytes through ReadTo (nullopt when it fails), checking
// that ReadTo never gives more than the declared size and agrees with Read.
std::vector<std::optional<std::vector<std::byte>>> ReadAll(const ZipReader& zip,
                                                           const ZipReaderOptions& options) {
  std::vector<std::optional<std::vector<std::byte>>> out;
  for (const ZipEntry& e : zip.entries()) {
    FUZZ_CHECK(zip.Find(e.name) == &e);
    auto read = zip.Read(e.name);
    if (read.ok()) FUZZ_CHECK(read->size() == e.size);
    if (e.size > options.max_read_size) {
      FUZZ_CHECK(!read.ok());
      out.emplace_back();
      continue;
    }
    std::vector<std::byte> bytes;
    Status s = zip.ReadTo(e.name, [&](ByteView chunk) {
      bytes.insert(bytes.end(), chunk.begin(), chunk.end());
      return Status::Ok();
    });
    FUZZ_CHECK(bytes.size() <= e.size);
    FUZZ_CHECK(s.ok() == read.ok());
    if (s.ok()) {
      FUZZ_CHECK(bytes == *read);
      out.emplace_back(std::move(bytes));
    } else {
      FUZZ_CHECK(!s.message().empty());
      out.emplace_back();
    }
  }
  return out;
}

}  // namespace

// `message` without the "<source>: " its reader puts first.
std::string_view AfterSource(const std::string& message, std::string_view source) {
  std::string_view m = message;
  if (m.substr(0, source.size() + 2) == std::string(source) + ": ")
    m.remove_prefix(source.size() + 2);
  return m;
}

void FuzzSafetensors(Input data) {
  const ByteView bytes = Bytes(data);
  auto file = safetensors::File::FromBuffer(bytes);
  // The complete validator alone must judge every input as the fast path
  // and the complete validator together do.
  safetensors::ReaderOptions complete;
  complete.skip_fast_path = true;
  auto checked = safetensors::File::FromBuffer(bytes, complete);
  FUZZ_CHECK(file.ok() == checked.ok());
  // So must a read through a source (two reads: length and header).
  auto source = std::make_shared<MemorySource>(bytes);
  auto remote = safetensors::File::OpenSource(source);
  FUZZ_CHECK(file.ok() == remote.ok());
  if (!file.ok()) {
    FUZZ_CHECK(!file.status().message().empty());
    FUZZ_CHECK(file.status().code() != StatusCode::kInternal);
    FUZZ_CHECK(file.status().message() == checked.status().message());
    FUZZ_CHECK(AfterSource(file.status().message(), "<buffer>") ==
               AfterSource(remote.status().message(), source->name()));
    return;
  }
  FUZZ_CHECK(checked->size() == file->size() && remote->size() == file->size());
  FUZZ_CHECK(checked->metadata() == file->metadata() && remote->metadata() == file->metadata());
  std::uint64_t next = 0;
  std::vector<std::byte> copy;
  for (std::size_t i = 0; i < file->size(); ++i) {
    const auto& t = file->tensors()[i];
    FUZZ_CHECK(Within(t.data, bytes));
    FUZZ_CHECK(t.data_offset == next);
    auto size = safetensors::ByteSize(t.dtype, t.numel());
    FUZZ_CHECK(size && *size == t.data.size() && t.byte_size() == t.data.size());
    next += t.data.size();
    FUZZ_CHECK(file->Find(t.name) != nullptr);
    const auto& c = checked->tensors()[i];
    const auto& r = remote->tensors()[i];
    FUZZ_CHECK(c.name == t.name && c.dtype == t.dtype && c.data.data() == t.data.data() &&
               c.data.size() == t.data.size() && std::ranges::equal(c.shape, t.shape));
    FUZZ_CHECK(r.name == t.name && r.dtype == t.dtype && r.data_offset == t.data_offset &&
               r.byte_size() == t.data.size() && std::ranges::equal(r.shape, t.shape));
    copy.resize(t.data.size());
    FUZZ_CHECK(remote->ReadInto(r, copy).ok());
    FUZZ_CHECK(std::ranges::equal(copy, t.data));
  }
  FUZZ_CHECK(file->data_start() + next == bytes.size());
  FUZZ_CHECK(file->Names().size() == file->size());
  for (const auto& [key, value] : file->metadata())
    FUZZ_CHECK(key.size() + value.size() < bytes.size());
}

void FuzzConfig(Input data) {
  auto config = ParseConfig(Text(data));
  if (!config.ok()) return;
  auto text = WriteConfig(*config);
  FUZZ_CHECK(text.ok());
  auto again = ParseConfig(*text);
  FUZZ_CHECK(again.ok());
  auto text2 = WriteConfig(*again);
  FUZZ_CHECK(text2.ok() && *text2 == *text);
}

void FuzzTensorIndex(Input data) {
  auto index = ParseIndex(Text(data));
  if (!index.ok()) return;
  const std::string text = WriteIndex(*index);
  auto again = ParseIndex(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(WriteIndex(*again) == text);
  for (const auto& entry : index->tensors) {
    if (entry.nested()) continue;
    (void)DecodeTensor(entry, Bytes(data));
  }
}

void FuzzManifest(Input data) {
  auto m = manifest::Manifest::Parse(Bytes(data));
  if (!m.ok()) return;
  FUZZ_CHECK(m->Serialize() == Text(data));
}

void FuzzLinks(Input data) {
  auto links = links::ParseLinks(Text(data));
  if (!links.ok()) return;
  auto again = links::ParseLinks(links::WriteLinks(*links));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *links);
}

void FuzzRegistryText(Input data) {
  if (data.empty()) return;
  const std::string_view text = Text(data.subspan(1));
  switch (data[0] % 8) {
    case 0: {
      auto ref = ParseOciReference(text);
      if (!ref.ok()) return;
      auto again = ParseOciReference(ref->ToString());
      FUZZ_CHECK(again.ok());
      FUZZ_CHECK(again->ToString() == ref->ToString());
      return;
    }
    case 1:
      (void)oci::ParseDockerConfig(text, "fuzz");
      return;
    case 2:
      (void)net::ParseHostHeaders(text);
      return;
    case 3: {
      auto pattern = net::ParseHostPattern(text);
      if (!pattern.ok()) return;
      auto again = net::ParseHostPattern(net::ToString(*pattern));
      FUZZ_CHECK(again.ok());
      FUZZ_CHECK(*again == *pattern);
      return;
    }
    case 4:
      (void)net::RefusedTarget(text);
      (void)net::CheckUrlAccess(text, net::HttpAccess{});
      return;
    case 5: {
      // WWW-Authenticate values, one per line.
      std::vector<std::string> values;
      for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        values.emplace_back(text.substr(start, end - start));
        start = end + 1;
      }
      for (const oci::Challenge& c : oci::ParseChallenges(values)) {
        FUZZ_CHECK(!c.scheme.empty());
        FUZZ_CHECK(IsLowercase(c.scheme));
        for (const auto& [name, value] : c.params) FUZZ_CHECK(!name.empty() && IsLowercase(name));
      }
      return;
    }
    case 6: {
      auto token = oci::ParseTokenResponse(text, "realm");
      if (!token.ok()) return;
      FUZZ_CHECK(!token->value.empty());
      for (char c : token->value) FUZZ_CHECK(c > ' ' && c < 0x7f);
      FUZZ_CHECK(token->lifetime.count() > 0);
      return;
    }
    default: {
      const std::string error = oci::RegistryError(text);
      for (char c : error) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20);
      return;
    }
  }
}

void FuzzOciArtifact(Input data) {
  const std::string_view text = Text(data);
  const std::size_t a = text.find('\0');
  if (a == std::string_view::npos) return;
  const std::size_t b = text.find('\0', a + 1);
  if (b == std::string_view::npos) return;
  const Status s = oci::CheckOciArtifact(text.substr(0, a), text.substr(a + 1, b - a - 1),
                                         text.substr(b + 1), "oci://r/m:t");
  if (s.ok()) return;
  FUZZ_CHECK(s.code() == StatusCode::kCorrupt || s.code() == StatusCode::kUnsupported);
  FUZZ_CHECK(s.message().rfind("oci://r/m:t: ", 0) == 0);
}

void FuzzModelPackLayer(Input data) {
  if (data.empty()) return;
  static constexpr std::array<std::string_view, 3> kTypes = {
      "application/vnd.cncf.model.weight.v1.tar", "application/vnd.cncf.model.weight.v1.tar+gzip",
      "application/vnd.cncf.model.weight.v1.tar+zstd"};
  const std::string_view type = kTypes[static_cast<unsigned char>(data[0]) % kTypes.size()];
  const ByteView layer = Bytes(data.subspan(1));
  auto files = oci::ReadModelPackTarLayer(type, layer, "layers[0]");
  if (!files.ok()) {
    const StatusCode code = files.status().code();
    FUZZ_CHECK(code == StatusCode::kCorrupt || code == StatusCode::kUnsupported);
    FUZZ_CHECK(files.status().message().rfind("layers[0]: ", 0) == 0);
    return;
  }
  std::uint64_t total = 0;
  for (const oci::ModelPackLayerFile& f : *files) {
    FUZZ_CHECK(manifest::ValidateEntryPath("model/" + f.path).ok());
    total += f.size;
  }
  // A plain tar holds its files' bytes; a compressed one at most the ratio
  // limit times its size (or 16 MiB).
  if (type.ends_with(".tar")) FUZZ_CHECK(total <= layer.size());
}

void FuzzZip(Input data) {
  const ByteView bytes = Bytes(data);
  ZipReaderOptions options;
  options.max_read_size = 16 << 20;
  auto zip = ZipReader::OpenBuffer(bytes, options);
  if (!zip.ok()) return;
  FUZZ_CHECK(zip->archive().data() == bytes.data());
  for (const ZipEntry& e : zip->entries()) {
    FUZZ_CHECK(zip->Find(e.name) == &e);
    auto read = zip->Read(e.name);
    if (read.ok()) FUZZ_CHECK(read->size() == e.size);
    if (e.size <= options.max_read_size) {
      std::uint64_t total = 0;
      Status s = zip->ReadTo(e.name, [&](ByteView chunk) {
        total += chunk.size();
        return Status::Ok();
      });
      FUZZ_CHECK(s.ok() == read.ok());
      FUZZ_CHECK(total <= e.size);
    }
    auto offset = zip->DataOffset(e.name);
    auto mapped = zip->MappedData(e.name);
    FUZZ_CHECK(offset.ok() == mapped.ok());
    if (mapped.ok()) {
      FUZZ_CHECK(Within(*mapped, bytes));
      FUZZ_CHECK(mapped->size() == e.compressed_size);
      FUZZ_CHECK(mapped->data() == bytes.data() + *offset);
    }
  }
}

void FuzzZipSource(Input data) {
  const ByteView bytes = Bytes(data);
  ZipReaderOptions options;
  options.max_read_size = 16 << 20;
  auto source = ZipReader::OpenSource(std::make_unique<MemorySource>(bytes), options);
  auto buffer = ZipReader::OpenBuffer(bytes, options);
  if (!source.ok()) {
    FUZZ_CHECK(!source.status().message().empty());
    // The source reader applies the rules of Open() (but checks a local
    // header only when its entry is read), so it accepts whatever the
    // buffer reader accepts.
    FUZZ_CHECK(!buffer.ok());
    return;
  }
  FUZZ_CHECK(source->archive().empty());
  for (const ZipEntry& e : source->entries()) {
    FUZZ_CHECK(source->MappedData(e.name).status().code() == StatusCode::kInvalidArgument);
    FUZZ_CHECK(!source->DataOffset(e.name).ok());
  }
  const auto from_source = ReadAll(*source, options);
  if (!buffer.ok()) return;
  FUZZ_CHECK(buffer->entries().size() == source->entries().size());
  for (std::size_t i = 0; i < buffer->entries().size(); ++i) {
    const ZipEntry& a = buffer->entries()[i];
    const ZipEntry& b = source->entries()[i];
    FUZZ_CHECK(a.name == b.name);
    FUZZ_CHECK(a.method == b.method);
    FUZZ_CHECK(a.size == b.size && a.compressed_size == b.compressed_size);
    FUZZ_CHECK(a.crc32 == b.crc32);
    FUZZ_CHECK(a.is_dir == b.is_dir && a.is_symlink == b.is_symlink);
    FUZZ_CHECK(a.encrypted == b.encrypted);
  }
  const auto from_buffer = ReadAll(*buffer, options);
  FUZZ_CHECK(from_buffer == from_source);
}

void FuzzCarton(Input data) {
  UniqueFd fd(memfd_create("carton-fuzz", MFD_CLOEXEC));
  if (!fd.valid()) std::abort();
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  Environment env;
  env.threads = 1;
  // Each read through a source of its own, as each command opens one.
  auto report = Verify(*OpenSource(path, env).value());
  FUZZ_CHECK(report.ok());
  auto info = OpenSource(path, env).value()->Info();
  auto hash = OpenSource(path, env).value()->ManifestHash();
  if (info.ok()) {
    FUZZ_CHECK(hash.ok() && *hash == info->manifest_hash);
  }
  if (report->ok()) FUZZ_CHECK(info.ok());
}

void FuzzSlice(Input data) {
  // Prefix: rank, one byte per dimension, one byte for the dtype.
  if (data.empty()) return;
  const std::size_t rank = data[0] % 5;
  if (data.size() < 2 + rank) return;
  std::vector<std::uint64_t> shape;
  for (std::size_t i = 0; i < rank; ++i) shape.push_back(data[1 + i] % 7);
  const auto dtypes = safetensors::AllDtypes();
  const safetensors::Dtype dtype = dtypes[data[1 + rank] % dtypes.size()];
  const std::string_view text = Text(data.subspan(2 + rank));

  auto indices = safetensors::ParseSlice(text);
  if (!indices.ok()) return;
  auto again = safetensors::ParseSlice(safetensors::SliceToString(*indices));
  FUZZ_CHECK(again.ok() && *again == *indices);

  auto numel = safetensors::CheckedNumel(shape);
  FUZZ_CHECK(numel.has_value());
  auto size = safetensors::ByteSize(dtype, *numel);
  if (!size) return;  // a sub-byte dtype with a partial byte
  std::vector<std::byte> buffer(*size);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>(i);
  safetensors::TensorView view{"t", dtype, shape, buffer, 0};
  auto plan = safetensors::PlanSlice(view, *indices);
  auto slice = safetensors::ReadSlice(view, *indices);
  FUZZ_CHECK(plan.ok() == slice.ok());
  if (!plan.ok()) return;
  FUZZ_CHECK(slice->data.size() == plan->byte_size);
  FUZZ_CHECK(slice->shape == plan->shape);
  FUZZ_CHECK(plan->byte_size <= buffer.size());
}

void FuzzBundle(Input data) {
  auto bundle = sign::ParseBundle(Bytes(data));
  if (!bundle.ok()) {
    FUZZ_CHECK(bundle.status().code() == StatusCode::kCorrupt ||
               bundle.status().code() == StatusCode::kUnsupported);
    return;
  }
  const sign::Statement& s = bundle->statement;
  FUZZ_CHECK(sign::RootDigest(s.resources) == s.root_digest);
  auto again = sign::ParseBundle(AsBytes(sign::BundleJson(*bundle)));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->payload == bundle->payload && again->signature == bundle->signature);
  FUZZ_CHECK(again->statement.resources == s.resources);
  FUZZ_CHECK(again->certificates == bundle->certificates);
  auto alone = sign::ParseStatement(bundle->payload);
  FUZZ_CHECK(alone.ok() && alone->resources == s.resources &&
             alone->ignore_paths == s.ignore_paths);
  static const auto* stranger = [] {
    auto key = sign::PrivateKey::Generate(sign::Curve::kP256);
    FUZZ_CHECK(key.ok());
    return new sign::TrustedSigners{{key->public_key()}, {}, {}, std::nullopt};
  }();
  FUZZ_CHECK(!sign::VerifyBundle(*bundle, *stranger).ok());
}

std::span<const Target> AllTargets() {
  static constexpr std::array<Target, 13> kTargets = {{
      {"safetensors", FuzzSafetensors},
      {"config", FuzzConfig},
      {"tensor_index", FuzzTensorIndex},
      {"manifest", FuzzManifest},
      {"links", FuzzLinks},
      {"zip", FuzzZip},
      {"zip_source", FuzzZipSource},
      {"carton", FuzzCarton},
      {"slice", FuzzSlice},
      {"registry_text", FuzzRegistryText},
      {"oci_artifact", FuzzOciArtifact},
      {"modelpack_layer", FuzzModelPackLayer},
      {"bundle", FuzzBundle},
  }};
  return kTargets;
}

}  // namespace carton::fuzz

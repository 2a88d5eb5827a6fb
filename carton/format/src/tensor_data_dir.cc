// Reading and writing a tensor_data/ folder on disk.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/format/tensor_data.h"
#include "carton/safetensors/tensor.h"
#include "tensor_data_internal.h"

namespace carton {
namespace format_internal {
namespace {

namespace fs = std::filesystem;

std::string Join(const std::string& dir, std::string_view name) {
  return (fs::path(dir) / fs::path(name)).string();
}

std::string Label(std::string_view name) { return "tensor \"" + std::string(name) + "\""; }

// A file to write: its name in the folder and either borrowed bytes or owned
// text.
struct PendingFile {
  std::string file;
  bool is_text = false;
  ByteView bytes;
  std::string text;
};

Status CheckPlain(const PlainTensorRef& t) {
  if (t.name.empty()) return InvalidArgument("tensor_data: a tensor has an empty name");
  if (!IsValidUtf8(t.name)) {
    return InvalidArgument("tensor_data: tensor name is not valid UTF-8");
  }
  // index.toml stores dimensions as TOML integers (signed 64-bit).
  for (std::uint64_t d : t.shape) {
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return InvalidArgument("tensor_data: " + Label(t.name) + ": dimension " + std::to_string(d) +
                             " does not fit in a TOML integer");
    }
  }
  std::optional<std::uint64_t> numel = safetensors::CheckedNumel(t.shape);
  const std::string shape = safetensors::ShapeToString(t.shape);
  if (!numel) {
    return InvalidArgument("tensor_data: " + Label(t.name) + ": shape " + shape +
                           " overflows 64 bits");
  }
  if (t.dtype == DataType::kString) {
    if (!t.data.empty() || t.strings.size() != *numel) {
      return InvalidArgument("tensor_data: " + Label(t.name) + ": string " + shape + " needs " +
                             std::to_string(*numel) + " strings (and no bytes) but has " +
                             std::to_string(t.strings.size()));
    }
    return Status::Ok();
  }
  std::uint64_t need = 0;
  if (!CheckedMul(*numel, DataTypeSize(t.dtype), &need) || t.data.size() != need ||
      !t.strings.empty()) {
    return InvalidArgument("tensor_data: " + Label(t.name) + ": " +
                           std::string(DataTypeName(t.dtype)) + " " + shape + " needs " +
                           std::to_string(need) + " bytes (and no strings) but has " +
                           std::to_string(t.data.size()));
  }
  return Status::Ok();
}

// Adds an index entry for each nested tensor, and its inner tensors to
// `unnested` under generated names.
Status FlattenNested(const std::vector<NestedTensorRef>& nested,
                     std::vector<PlainTensorRef>& unnested, TensorDataIndex& index) {
  for (const NestedTensorRef& n : nested) {
    if (n.name.empty()) return InvalidArgument("tensor_data: a tensor has an empty name");
    if (!IsValidUtf8(n.name)) {
      return InvalidArgument("tensor_data: tensor name is not valid UTF-8");
    }
    TensorDataEntry e;
    e.name = n.name;
    for (std::size_t k = 0; k < n.inner.size(); ++k) {
      PlainTensorRef inner = n.inner[k];
      inner.name = std::string(kNestedInnerPrefix) + n.name + "_" + std::to_string(k);
      e.inner.push_back(inner.name);
      unnested.push_back(std::move(inner));
    }
    index.tensors.push_back(std::move(e));
  }
  return Status::Ok();
}

// Checks each non-nested tensor and adds its index entry; returns its file
// (tensor_<i>.bin, borrowing the tensor's bytes, or tensor_<i>.toml).
Result<std::vector<PendingFile>> EncodePlain(const std::vector<PlainTensorRef>& unnested,
                                             TensorDataIndex& index) {
  std::vector<PendingFile> files;
  files.reserve(unnested.size());
  for (std::size_t i = 0; i < unnested.size(); ++i) {
    const PlainTensorRef& t = unnested[i];
    CARTON_RETURN_IF_ERROR(CheckPlain(t));
    TensorDataEntry e;
    e.name = t.name;
    e.dtype = t.dtype;
    e.shape.assign(t.shape.begin(), t.shape.end());
    PendingFile f;
    if (t.dtype == DataType::kString) {
      e.file = "tensor_" + std::to_string(i) + ".toml";
      Result<std::string> text = EncodeStrings(t.strings);
      if (!text.ok()) return text.status().WithContext("tensor_data: " + Label(t.name));
      f.text = std::move(text).value();
      f.is_text = true;
    } else {
      e.file = "tensor_" + std::to_string(i) + ".bin";
      f.bytes = t.data;
    }
    f.file = e.file;
    files.push_back(std::move(f));
    index.tensors.push_back(std::move(e));
  }
  return files;
}

// Every name in the index, generated ones included, must be unique.
Status CheckUniqueNames(const TensorDataIndex& index) {
  std::unordered_set<std::string_view> names;
  for (const TensorDataEntry& e : index.tensors) {
    if (!names.insert(e.name).second) {
      return InvalidArgument("tensor_data: duplicate tensor name \"" + e.name + "\"" +
                             (e.name.starts_with(kNestedInnerPrefix)
                                  ? " (names starting with " + std::string(kNestedInnerPrefix) +
                                        " are used for the inner tensors of nested tensors)"
                                  : std::string()));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<MappedFile> OpenTensorFile(const std::string& dir, const TensorDataEntry& entry) {
  const std::string where = "tensor_data/" + entry.file + ": " + Label(entry.name);
  if (entry.nested()) return InvalidArgument(Label(entry.name) + " is nested and has no file");
  if (std::optional<std::string> problem = PathProblem(entry.file)) {
    return Corrupt(where + ": file " + *problem);
  }
  const std::string path = Join(dir, entry.file);
  std::error_code ec;
  fs::file_status st = fs::symlink_status(path, ec);
  if (st.type() == fs::file_type::not_found) return Corrupt(where + ": file is missing");
  if (ec) return IoError(path + ": " + ec.message());
  if (st.type() != fs::file_type::regular) return Corrupt(where + ": not a regular file");
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return file;
}

// The files of a tensor_data folder holding `plain` and `nested`, checked:
// one per non-nested tensor, and the index text.
struct EncodedTensorData {
  std::vector<PendingFile> files;
  std::string index_text;
};

Result<EncodedTensorData> EncodeTensorRefs(const std::vector<PlainTensorRef>& plain,
                                           const std::vector<NestedTensorRef>& nested) {
  // The non-nested entries in file order: top-level tensors, then the inner
  // tensors of each nested tensor under generated names.
  std::vector<PlainTensorRef> unnested = plain;
  TensorDataIndex index;
  CARTON_RETURN_IF_ERROR(FlattenNested(nested, unnested, index));
  CARTON_ASSIGN_OR_RETURN(std::vector<PendingFile> files, EncodePlain(unnested, index));
  CARTON_RETURN_IF_ERROR(CheckUniqueNames(index));
  std::string index_text = WriteIndex(index);
  // Everything above was checked, so this holds unless the writer is wrong.
  if (Result<TensorDataIndex> reparsed = ParseIndex(index_text); !reparsed.ok()) {
    return Internal("tensor_data: written index does not parse: " + reparsed.status().message());
  }
  return EncodedTensorData{std::move(files), std::move(index_text)};
}

Status WriteTensorRefs(const std::string& dir, const std::vector<PlainTensorRef>& plain,
                       const std::vector<NestedTensorRef>& nested) {
  CARTON_ASSIGN_OR_RETURN(EncodedTensorData encoded, EncodeTensorRefs(plain, nested));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create directory: " + ec.message());
  for (const PendingFile& f : encoded.files) {
    CARTON_RETURN_IF_ERROR(
        WriteFileAtomically(Join(dir, f.file), f.is_text ? AsBytes(f.text) : f.bytes));
  }
  return WriteFileAtomically(Join(dir, kTensorIndexFileName), AsBytes(encoded.index_text));
}

}  // namespace format_internal

using format_internal::NestedTensorRef;
using format_internal::PlainTensorRef;

namespace {

// `data` as borrowed references.
std::pair<std::vector<PlainTensorRef>, std::vector<NestedTensorRef>> RefsOf(
    const TensorData& data) {
  auto ref = [](const TensorValue& v) {
    return PlainTensorRef{v.name, v.dtype, v.shape, v.data, v.strings};
  };
  std::vector<PlainTensorRef> plain;
  plain.reserve(data.tensors.size());
  for (const TensorValue& v : data.tensors) plain.push_back(ref(v));
  std::vector<NestedTensorRef> nested;
  nested.reserve(data.nested.size());
  for (const NestedTensorValue& n : data.nested) {
    NestedTensorRef r{n.name, {}};
    for (const TensorValue& v : n.inner) r.inner.push_back(ref(v));
    nested.push_back(std::move(r));
  }
  return {std::move(plain), std::move(nested)};
}

}  // namespace

Status WriteTensorDataDir(const std::string& dir, const TensorData& data) {
  const auto [plain, nested] = RefsOf(data);
  return format_internal::WriteTensorRefs(dir, plain, nested);
}

Result<std::vector<TensorDataFile>> EncodeTensorData(const TensorData& data) {
  const auto [plain, nested] = RefsOf(data);
  CARTON_ASSIGN_OR_RETURN(format_internal::EncodedTensorData encoded,
                          format_internal::EncodeTensorRefs(plain, nested));
  std::vector<TensorDataFile> out;
  out.reserve(encoded.files.size() + 1);
  for (auto& f : encoded.files) {
    out.push_back({f.file, f.is_text ? std::move(f.text) : std::string(AsChars(f.bytes))});
  }
  out.push_back({std::string(kTensorIndexFileName), std::move(encoded.index_text)});
  return out;
}

Result<TensorDataIndex> ReadTensorDataIndex(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status dir_status = fs::status(dir, ec);
  if (dir_status.type() == fs::file_type::not_found) {
    return NotFound(dir + ": no such directory");
  }
  if (ec) return IoError(dir + ": " + ec.message());
  if (dir_status.type() != fs::file_type::directory) {
    return InvalidArgument(dir + ": not a directory");
  }
  const std::string path = format_internal::Join(dir, kTensorIndexFileName);
  fs::file_status st = fs::symlink_status(path, ec);
  if (st.type() != fs::file_type::not_found && ec) return IoError(path + ": " + ec.message());
  if (st.type() == fs::file_type::not_found) {
    // The spec requires index.toml only when the folder holds other files.
    fs::directory_iterator it(dir, ec);
    if (ec) return IoError(dir + ": " + ec.message());
    if (it != fs::directory_iterator()) {
      return Corrupt("tensor_data: index.toml is missing but the folder holds \"" +
                     it->path().filename().string() + "\"");
    }
    return TensorDataIndex{};
  }
  if (st.type() != fs::file_type::regular) {
    return Corrupt("tensor_data/index.toml: not a regular file");
  }
  CARTON_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return ParseIndex(AsChars(file.bytes()));
}

Result<TensorValue> ReadTensor(const std::string& dir, const TensorDataEntry& entry) {
  CARTON_ASSIGN_OR_RETURN(MappedFile file, format_internal::OpenTensorFile(dir, entry));
  return DecodeTensor(entry, file.bytes());
}

Result<TensorData> ReadTensorDataDir(const std::string& dir) {
  CARTON_ASSIGN_OR_RETURN(TensorDataIndex index, ReadTensorDataIndex(dir));
  // How many nested tensors use each entry; the last use takes the value.
  std::unordered_map<std::string_view, std::size_t> uses;
  std::unordered_map<std::string_view, std::size_t> position;
  for (std::size_t i = 0; i < index.tensors.size(); ++i) {
    position.emplace(index.tensors[i].name, i);
    for (const std::string& inner : index.tensors[i].inner) ++uses[inner];
  }
  std::vector<std::optional<TensorValue>> values(index.tensors.size());
  TensorData out;
  for (std::size_t i = 0; i < index.tensors.size(); ++i) {
    const TensorDataEntry& e = index.tensors[i];
    if (e.nested()) continue;
    CARTON_ASSIGN_OR_RETURN(TensorValue v, ReadTensor(dir, e));
    values[i] = std::move(v);
  }
  for (std::size_t i = 0; i < index.tensors.size(); ++i) {
    const TensorDataEntry& e = index.tensors[i];
    if (!e.nested()) {
      if (!uses.contains(e.name)) out.tensors.push_back(std::move(*values[i]));
      continue;
    }
    NestedTensorValue n{e.name, {}};
    for (const std::string& inner : e.inner) {
      std::optional<TensorValue>& v = values[position.at(inner)];
      if (--uses[inner] == 0) {
        n.inner.push_back(std::move(*v));
      } else {
        n.inner.push_back(*v);
      }
    }
    out.nested.push_back(std::move(n));
  }
  return out;
}

}  // namespace carton

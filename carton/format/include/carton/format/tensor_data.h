// tensor_data: the optional tensor_data/ folder of a carton (spec, section
// "tensor_data"): an index.toml naming every tensor, one .bin file per
// numeric tensor (little-endian, C order), one .toml file per string tensor
// (`data = ["a", "b"]`), and nested (ragged) tensors that list other,
// non-nested entries of the index as their `inner` tensors.
//
// Layout written here (compatible with the original implementation, which
// requires `tensor` and `inner` on read):
//   * index.toml always exists; an empty index is `tensor = []`;
//   * every entry carries `inner` (`inner = []` unless nested);
//   * nested entries come first, then the other tensors; the i-th non-nested
//     entry is stored in tensor_<i>.bin or tensor_<i>.toml;
//   * the k-th inner tensor of nested tensor N is the entry
//     "_carton_nested_inner_N_k".
//
// Rules enforced when reading (all input is untrusted):
//   * names are non-empty, unique strings;
//   * dtype is a carton DataType name or "nested" (anything else:
//     kUnsupported);
//   * a non-nested entry has `shape` (non-negative integers whose element
//     count and byte size fit in 64 bits) and `file`, a relative path inside
//     tensor_data/ (no leading "/", no backslash, no empty, "." or ".."
//     component) ending in .toml for strings and .bin otherwise; `inner` may
//     be absent or empty;
//   * a nested entry has `inner` naming existing non-nested entries and has
//     neither `shape` nor `file`;
//   * unknown keys are ignored, like everywhere in carton v1.
// Errors name the file and, for TOML, line and column:
//   `tensor_data/index.toml:4:9: tensor "x": shape[1] is -2, not a
//   non-negative integer`.
//
// Ownership: every type here owns its data. Functions taking a ByteView only
// read it during the call. Thread-safety: plain values and free functions;
// concurrent calls on different directories are safe.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/format/data_type.h"

namespace carton {

// Largest index.toml accepted, checked before parsing.
inline constexpr std::uint64_t kMaxTensorIndexSize = 16u << 20;
// Largest string tensor .toml accepted. A TOML parse costs far more memory
// than the text, so this stays well below what a .bin may hold.
inline constexpr std::uint64_t kMaxStringTensorFileSize = 64u << 20;
inline constexpr std::string_view kTensorIndexFileName = "index.toml";

// The limits ParseIndex and DecodeTensor apply.
struct TensorDataLimits {
  std::uint64_t max_index_size = kMaxTensorIndexSize;
  std::uint64_t max_string_file_size = kMaxStringTensorFileSize;
};
// Names of the inner tensors of nested tensors start with this.
inline constexpr std::string_view kNestedInnerPrefix = "_carton_nested_inner_";

// One `[[tensor]]` of index.toml.
struct TensorDataEntry {
  std::string name;
  // The element type; nullopt for dtype = "nested".
  std::optional<DataType> dtype;
  // Non-nested entries only (a 0-rank tensor has an empty shape).
  std::vector<std::uint64_t> shape;
  // Non-nested entries only: path relative to tensor_data/.
  std::string file;
  // Nested entries only: names of non-nested entries of the same index.
  std::vector<std::string> inner;

  bool nested() const { return !dtype.has_value(); }
};

struct TensorDataIndex {
  std::vector<TensorDataEntry> tensors;

  // nullptr if no entry is called `name`.
  const TensorDataEntry* Find(std::string_view name) const;
};

// Parses and validates index.toml. Untrusted input. Errors: kCorrupt for
// broken TOML or a broken rule, kUnsupported for an unknown dtype; messages
// start with "tensor_data/index.toml:LINE:COL: ". `limits.max_index_size`
// replaces kMaxTensorIndexSize.
Result<TensorDataIndex> ParseIndex(std::string_view toml_text, const TensorDataLimits& limits = {});

// Serializes `index` in the layout above; deterministic (same index, same
// bytes). REQUIRES: `index` follows the rules above (as any index from
// ParseIndex does); names and files are valid UTF-8.
std::string WriteIndex(const TensorDataIndex& index);

// A non-nested tensor held in memory.
struct TensorValue {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<std::uint64_t> shape;
  // Numeric types: numel * DataTypeSize(dtype) bytes, little-endian, C order.
  std::vector<std::byte> data;
  // kString: numel UTF-8 strings, C order.
  std::vector<std::string> strings;
};

// A nested (ragged) tensor: a list of non-nested tensors. The names of the
// inner values are ignored on write and set to their index names on read.
struct NestedTensorValue {
  std::string name;
  std::vector<TensorValue> inner;
};

// The contents of a tensor_data/ folder. On read, `tensors` holds the
// entries not used as inner tensors, both lists in index order.
struct TensorData {
  std::vector<TensorValue> tensors;
  std::vector<NestedTensorValue> nested;
};

// Decodes the bytes of the file `entry.file`. Untrusted input. Errors:
// kCorrupt when a .bin is not exactly numel * element size bytes, or a
// string file is not `data = [strings]` with numel strings (messages name
// the file, the tensor and both sizes); kInvalidArgument for a nested entry.
// `limits.max_string_file_size` replaces kMaxStringTensorFileSize.
Result<TensorValue> DecodeTensor(const TensorDataEntry& entry, ByteView file_bytes,
                                 const TensorDataLimits& limits = {});

// The little-endian bytes of `values`, as stored in a .bin file.
template <typename T>
requires((std::integral<T> && !std::same_as<T, bool>) || std::same_as<T, float> ||
         std::same_as<T, double>) std::vector<std::byte> EncodeNumeric(std::span<const T> values) {
  using U = std::make_unsigned_t<
      std::conditional_t<std::is_floating_point_v<T>,
                         std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>, T>>;
  std::vector<std::byte> out(values.size() * sizeof(T));
  for (std::size_t i = 0; i < values.size(); ++i) {
    U u = std::bit_cast<U>(values[i]);
    for (std::size_t b = 0; b < sizeof(T); ++b) {
      out[i * sizeof(T) + b] = static_cast<std::byte>((u >> (8 * b)) & 0xff);
    }
  }
  return out;
}

// The .toml text of a string tensor: `data = [...]`. Errors:
// kInvalidArgument if a string is not valid UTF-8.
Result<std::string> EncodeStrings(std::span<const std::string> strings);

// Writes index.toml and one file per non-nested tensor into `dir` (created
// if missing), each file atomically; index.toml is written last. Files
// already in `dir` that the new index does not name are left alone. Errors:
// kInvalidArgument (nothing written) for empty, duplicate or non-UTF-8 names,
// a name that collides with a generated inner name, data whose size does not
// match dtype and shape; kIoError.
Status WriteTensorDataDir(const std::string& dir, const TensorData& data);

// One file of a tensor_data folder: its name inside tensor_data/ and its
// bytes.
struct TensorDataFile {
  std::string name;
  std::string bytes;
};

// The files WriteTensorDataDir would write for `data`, in memory: one per
// non-nested tensor, then index.toml. Errors: as WriteTensorDataDir's
// kInvalidArgument (nothing is written).
Result<std::vector<TensorDataFile>> EncodeTensorData(const TensorData& data);

// Reads and validates `dir`/index.toml. A directory without index.toml is an
// empty index if it holds nothing else. Errors: kNotFound if `dir` does not
// exist; kCorrupt (index.toml missing beside other files, too large, or
// invalid); kUnsupported; kIoError.
Result<TensorDataIndex> ReadTensorDataIndex(const std::string& dir);

// Reads and decodes the file of one non-nested entry of `dir`'s index.
// Errors: kCorrupt if the file is missing, not a regular file or invalid;
// kInvalidArgument for a nested entry; kIoError.
Result<TensorValue> ReadTensor(const std::string& dir, const TensorDataEntry& entry);

// Reads a whole tensor_data/ folder. Errors as for ReadTensorDataIndex and
// ReadTensor.
Result<TensorData> ReadTensorDataDir(const std::string& dir);

// Converts a safetensors file into a tensor_data folder: one .bin per tensor,
// in name order. `__metadata__` is not kept (tensor_data has no place for
// it). Errors: those of safetensors::File::Open; kUnsupported naming the
// first tensor whose dtype has no carton equivalent (F16, BF16, BOOL, F8...),
// before anything is written; those of WriteTensorDataDir.
Status ImportSafetensors(const std::string& safetensors_path, const std::string& out_dir);

// The tensors of a safetensors file, copied into memory, in name order
// (`__metadata__` is not kept). Untrusted input. Errors: those of
// safetensors::File::Open; kUnsupported naming the first tensor whose dtype
// has no carton equivalent.
Result<TensorData> ReadSafetensorsTensors(const std::string& safetensors_path);

// Writes the tensors of the tensor_data folder `dir` to a safetensors file,
// atomically. Errors: those of ReadTensorDataIndex/ReadTensor; kUnsupported
// naming the first string or nested tensor (nothing written); those of
// safetensors::WriteFile.
Status ExportSafetensors(const std::string& dir, const std::string& out_path);

}  // namespace carton

// Pieces shared by the tensor_data sources (private to carton/format/src).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/mapped_file.h"
#include "carton/common/status.h"
#include "carton/common/utf8.h"
#include "carton/format/tensor_data.h"

namespace carton::format_internal {

using carton::IsValidUtf8;  // carton/common/utf8.h

// Why `path` is not an acceptable relative path inside tensor_data/ ("is
// absolute", "has a \"..\" component", ...), or nullopt when it is. The
// rules are those of zip entry names.
std::optional<std::string> PathProblem(std::string_view path);

// "tensor_data/<file>: tensor "<name>": ..." unless a .bin of `size` bytes
// holds exactly the numeric tensor `entry`. REQUIRES: !entry.nested() and
// entry.dtype is not kString.
Status CheckBinSize(const TensorDataEntry& entry, std::uint64_t size);

// Maps the data file of the non-nested `entry` inside `dir`. kCorrupt if it
// is missing or not a regular file (symbolic links are refused).
Result<MappedFile> OpenTensorFile(const std::string& dir, const TensorDataEntry& entry);

// A non-nested tensor to write, borrowing its shape and contents.
struct PlainTensorRef {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::span<const std::uint64_t> shape;
  ByteView data;                         // numeric types
  std::span<const std::string> strings;  // kString
};

struct NestedTensorRef {
  std::string name;
  std::vector<PlainTensorRef> inner;  // names ignored
};

// WriteTensorDataDir on borrowed data (same contract).
Status WriteTensorRefs(const std::string& dir, const std::vector<PlainTensorRef>& plain,
                       const std::vector<NestedTensorRef>& nested);

}  // namespace carton::format_internal

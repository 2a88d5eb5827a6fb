// Private: parses and validates a safetensors header (FORMAT.md §Reading).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/file.h"

namespace carton::safetensors::internal {

struct ParsedTensor {
  std::uint64_t name_offset;  // into ParsedHeader::names
  std::uint32_t name_size;
  Dtype dtype;
  std::uint32_t shape_begin;  // index into ParsedHeader::dims
  std::uint32_t rank;
  std::uint64_t begin;
  std::uint64_t end;
};

struct ParsedHeader {
  std::uint64_t header_size = 0;
  std::string names;                   // every tensor name, back to back
  std::vector<ParsedTensor> tensors;   // sorted by data offsets
  std::vector<std::uint32_t> by_name;  // indices into tensors, sorted by name
  std::vector<std::uint64_t> dims;

  std::string_view name(const ParsedTensor& t) const {
    return std::string_view(names).substr(t.name_offset, t.name_size);
  }
  Metadata metadata;
  bool has_metadata = false;
};

// Validates `file` (the whole safetensors file: length, header, data).
// Untrusted input. Messages carry no file name; the caller adds it.
Result<ParsedHeader> ParseHeader(ByteView file, const ReaderOptions& options);

// Slow path after the fast JSON parser rejected `json`: re-reads it to name
// the byte offset and the tensor/field at fault. Always returns an error.
Status DiagnoseJson(std::string_view json, std::string_view fast_parser_message);

// Builds an error Status for a safetensors rule.
Status Fail(ErrorKind kind, std::string message);

}  // namespace carton::safetensors::internal

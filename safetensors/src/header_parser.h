// Private: parses and validates a safetensors header (FORMAT.md §Reading).
//
// Two validators implement the same rules. The fast one (header_fast.cc,
// simdjson On-Demand) reads headers of the usual shape in one pass without
// building a DOM, and gives up, without a message, on anything else: any
// rule broken, any unusual but valid construct (unknown fields, escaped
// names, metadata keys with escapes). The complete one (header_dom.cc,
// simdjson's DOM) then decides and explains. Both feed Finish(), which runs
// the rules about the set of tensors (names, offsets), so a header accepted
// by the fast validator gives exactly what the complete one would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/safetensors/file.h"

namespace carton::safetensors::internal {

// Bytes the JSON parser may read past the end of the JSON text. A caller
// that has them readable (the data section follows the header in a
// mapping) lets the parser read in place instead of copying.
inline constexpr std::size_t kJsonPadding = 64;

struct ParsedHeader {
  std::uint64_t header_size = 0;
  // In data order. Names borrow from the JSON text or from `names`; shapes
  // from `dims`; data is set when the caller gave the data section's bytes.
  std::vector<TensorView> tensors;
  std::vector<std::uint64_t> dims;
  std::deque<std::string> names;  // names that do not appear verbatim in the JSON
  // Lookup by name. A writer that sorts by name (the reference writer, for
  // files of one dtype) leaves names sorted in data order: then a binary
  // search over `tensors`. Otherwise open addressing, each slot the high
  // half of the name's hash and i + 1 for tensors[i] (0: empty).
  bool names_sorted = false;
  std::vector<std::uint64_t> table;
  Metadata metadata;
  bool has_metadata = false;

  const TensorView* Find(std::string_view name) const;
};

// One tensor entry as a validator reads it, before the rules on the whole
// set of tensors.
struct RawTensor {
  const char* name = nullptr;  // in the JSON text, or in ParsedHeader::names
  std::uint32_t name_size = 0;
  std::uint32_t shape_begin = 0;  // index into Extracted::dims
  std::uint32_t rank = 0;
  Dtype dtype = Dtype::kU8;
  std::uint64_t begin = 0;  // data_offsets
  std::uint64_t end = 0;

  std::string_view name_view() const { return {name, name_size}; }
};
struct Extracted {
  std::vector<RawTensor> tensors;  // header order
  std::vector<std::uint64_t> dims;
};

// R1-R3: the header length N, from the file's first bytes (`head` holds at
// least the first min(8, file_size) bytes of the file).
Result<std::uint64_t> ParseHeaderLength(ByteView head, std::uint64_t file_size,
                                        const ReaderOptions& options);

// R4-R20 for `json`, the N header bytes of a file of `file_size` bytes.
// `readable_after`: how many bytes after `json` may be read (the parser
// copies the text when fewer than kJsonPadding). `data`: the data section
// when its bytes are in memory (TensorView::data is set from it), else
// empty. Untrusted input. Messages carry no file name; the caller adds it.
// REQUIRES: `json` (and `data`) outlive *out.
Status ParseHeaderJson(std::string_view json, std::uint64_t file_size, std::size_t readable_after,
                       ByteView data, const ReaderOptions& options, ParsedHeader* out);

// ParseHeaderLength, then ParseHeaderJson, for a whole file in memory.
Status ParseFile(ByteView file, const ReaderOptions& options, ParsedHeader* out);

// The fast validator: true when `body` (the header without its padding)
// was read and every rule it checks holds; false otherwise, with *out and
// *extracted in an unspecified state. `padded`: kJsonPadding bytes after
// `body` are readable. Fills *extracted and the metadata of *out.
bool ExtractFast(std::string_view body, bool padded, const ReaderOptions& options,
                 ParsedHeader* out, Extracted* extracted);

// The complete validator: fills *extracted and the metadata and names of
// *out, or says which rule `body` breaks.
Status ExtractDom(std::string_view body, const ReaderOptions& options, ParsedHeader* out,
                  Extracted* extracted);

// Checks what one tensor entry gives: numel and byte size (R14-R16).
// Returns false when a rule is broken (the complete validator reports it).
bool SizeMatches(Dtype dtype, std::span<const std::uint64_t> shape, std::uint64_t begin,
                 std::uint64_t end);

// Slow path after the fast JSON parser rejected `json`: re-reads it to name
// the byte offset and the tensor/field at fault. Always returns an error.
Status DiagnoseJson(std::string_view json, std::string_view fast_parser_message);

// Builds an error Status for a safetensors rule.
Status Fail(ErrorKind kind, std::string message);

}  // namespace carton::safetensors::internal

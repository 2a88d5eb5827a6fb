// The kinds of safetensors validation failure.
//
// Every Status returned by the safetensors reader for a malformed file is
// kCorrupt (or kUnsupported for an unknown dtype) and carries one of these
// in Status::detail(), so a caller or test can tell the rules apart without
// parsing messages. The message names the tensor and the values.
#pragma once

#include "carton/common/status.h"

namespace carton::safetensors {

enum class ErrorKind : int {
  kNone = 0,
  kFileTooSmall,     // fewer than 8 bytes
  kHeaderTooLarge,   // header length over the limit (100,000,000)
  kHeaderPastEnd,    // header length runs past the end of the file
  kHeaderNotUtf8,    // header bytes are not UTF-8
  kHeaderNoBrace,    // header does not start with '{'
  kInvalidJson,      // JSON syntax error
  kNotAnObject,      // header, a tensor entry or a field has the wrong JSON type
  kTrailingBytes,    // something other than spaces after the object
  kDuplicateKey,     // a key appears twice in one object
  kTooDeep,          // JSON nested beyond the depth limit
  kMissingField,     // dtype, shape or data_offsets absent
  kUnknownDtype,     // dtype string not known (Status code kUnsupported)
  kInvalidShape,     // a dimension negative, fractional or out of range
  kInvalidOffsets,   // data_offsets not two non-negative integers, or begin > end
  kNumelOverflow,    // numel * bits overflows 64 bits
  kPartialByte,      // sub-byte tensor that is not a whole number of bytes
  kSizeMismatch,     // end - begin != numel * dtype size
  kDataGap,          // offsets (in offset order) leave a hole or do not start at 0
  kDataOverlap,      // offsets (in offset order) overlap
  kDataEndMismatch,  // data section end != file end
  kInvalidMetadata,  // __metadata__ not an object of strings
};

inline ErrorKind KindOf(const Status& s) { return static_cast<ErrorKind>(s.detail()); }

}  // namespace carton::safetensors

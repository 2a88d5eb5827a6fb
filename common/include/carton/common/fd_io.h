// Positioned reads and writes of a whole range on an open file descriptor
// (pread(2)/pwrite(2)), retrying interrupted and partial transfers: what
// every reader and writer of file ranges needs, in one place.
//
// Thread-safety: as the system calls; several threads may read or write
// different ranges of one descriptor at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "carton/common/bytes.h"
#include "carton/common/status.h"

namespace carton {

// Reads from `offset` into `out` until it is full or the file ends; returns
// how many bytes were read (fewer than out.size() only at the end of the
// file). Errors: kIoError "<what>: read failed: <reason>".
Result<std::size_t> PreadFull(int fd, std::uint64_t offset, MutableByteView out,
                              std::string_view what);

// Writes all of `data` at `offset`. Errors: kIoError "<what>: write failed:
// <reason>" (a full disk included).
Status PwriteFull(int fd, std::uint64_t offset, ByteView data, std::string_view what);

}  // namespace carton

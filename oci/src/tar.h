// Private: a strict reader of the tar archives in ModelPack layers
// (oci/FORMAT.md "ModelPack artifacts", "Importing a ModelPack"). It
// reads ustar headers (GNU's "ustar  " magic too, and base-256 sizes),
// pax extended headers (their `path` and `size` records; other records
// are ignored, a global header with `path` or `size` is refused) and GNU
// `L` long names, and hands out regular files and directories only:
// symlinks, hard links, devices, FIFOs, sparse and other entry types are
// refused naming the entry. Names are returned as written (less a leading
// "./" and a directory's trailing "/"); the caller validates them. Input
// is untrusted: every header's checksum is checked, sizes are bounded by
// `max_entry_size` before anything is read, and the bytes after the end
// of the archive must be zeros. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "layer_stream.h"

namespace carton::oci::internal {

struct TarEntry {
  std::string name;
  bool directory = false;
  std::uint64_t size = 0;  // 0 for a directory
};

class TarReader {
 public:
  // Reads from `source` (not owned; outlives the reader). `where` names
  // the layer in messages.
  TarReader(ByteSource* source, std::string where, std::uint64_t max_entry_size);

  // The next entry, or nullopt at the end of the archive (after which the
  // rest of the source was read and found to be zeros). The previous
  // entry's data must have been read (ReadData). Errors: kCorrupt (a bad
  // header, checksum, number or pax record; a truncated archive; bytes
  // after the end), kUnsupported (a link, device, FIFO or other entry
  // type, naming the entry; a size over max_entry_size), kIoError.
  Result<std::optional<TarEntry>> Next();

  // Hands the current entry's data to `sink` in pieces, then skips its
  // padding. Errors: the sink's, and Next()'s.
  Status ReadData(const std::function<Status(ByteView)>& sink);

 private:
  Result<bool> ReadBlock(std::byte* block);  // false at a clean end
  Status ReadExact(std::byte* out, std::size_t n);
  Result<std::string> ReadSmallData(std::uint64_t size, const char* what);
  Status SkipPadding(std::uint64_t size);
  Status DrainZeros();
  Status ApplyPax(const std::string& records, bool global);
  // The entry of header `block` (size field `size`), with any pending
  // extended name and size.
  Result<std::optional<TarEntry>> TakeEntry(const std::byte* block, bool posix, std::uint64_t size);

  ByteSource* source_;
  const std::string where_;
  const std::uint64_t max_entry_size_;
  std::uint64_t remaining_ = 0;  // of the current entry's data
  std::uint64_t pending_padding_ = 0;
  std::uint64_t offset_ = 0;  // bytes of the tar read so far
  std::optional<std::string> next_name_;
  std::optional<std::uint64_t> next_size_;
  std::vector<std::byte> buffer_;
};

}  // namespace carton::oci::internal

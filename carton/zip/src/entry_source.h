// EntrySource: the libzip source through which zip_close reads the bytes of
// one entry ZipWriter added.
//
// Its STAT reports the entry's method, sizes and CRC-32 up front, so libzip
// copies compressed bytes (deflate and zstd, already compressed into the
// spool) as they are and writes the sizes it was told into the local header
// before the data. Stored bytes come from the spool, from a producer
// (AddLater, or AddStream's piece by piece), or, for AddFile and AddFileUnread, from the source
// file, read then: that read checks the file is still the version seen when it was added (the same
// FileIdentity when opened and at the end), so the archive cannot hold bytes other than those
// ZipAddResult (and its SHA-256) describe, without hashing the file twice. libzip computes the
// CRC-32 of stored bytes itself as it writes them, whatever STAT says.
//
// When libzip opens the source, the output's position must be the data
// offset ZipWriter computed: a check that its prediction of libzip's local
// header (and so every reported data offset and alignment) is exact.
//
// An entry of ZipOutput::kWriteThroughMin bytes or more writes each piece
// it reads into the archive itself, before handing it to libzip
// (ZipOutput::WriteThrough): its bytes are copied once in user space, into
// libzip's buffer, instead of twice.
//
// Memory: a 256 KiB buffer while libzip reads the entry (none for a stream
// or a producer, whose bytes are read where they are). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "carton/common/file_identity.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"
#include "carton/zip/writer.h"
#include "copier.h"
#include "libzip.h"
#include "output.h"
#include "spool.h"

namespace carton::zip_internal {

struct EntryData {
  std::string name;          // for messages
  std::uint16_t method = 0;  // zip method of the bytes handed to libzip
  std::uint64_t size = 0;    // uncompressed
  std::uint64_t compressed_size = 0;
  std::uint32_t crc32 = 0;
  std::uint64_t data_offset = 0;  // where ZipWriter placed the data
  // The bytes: the file at `file_path` (stored entries only), or what
  // `produce` returns or `stream` gives (stored entries only), or compressed_size bytes of the
  // spool from `spool_offset`.
  std::string file_path;
  FileIdentity identity;  // of `file_path` when added
  ZipWriter::Producer produce;
  ZipWriter::StreamProducer stream;  // or piece by piece (AddStream)
  std::uint64_t spool_offset = 0;
  // Stored file copied into place by a FileCopier: its job there (libzip
  // gets the bytes from the copier, for the CRC-32, and its writes of them
  // are dropped).
  FileCopier* copier = nullptr;
  std::size_t copier_job = 0;
  // Compressed bytes already at data_offset in the output (written before
  // zip_close, CompressFrames): libzip's copy of them is not read from
  // anywhere and its writes are dropped.
  bool prewritten = false;
};

class EntrySource {
 public:
  // `spool`, `output` and `on_read` must outlive this object. `on_read`
  // (when set) gets the size of each chunk read from a stored file.
  EntrySource(EntryData data, const Spool* spool, ZipOutput* output,
              const std::function<void(std::uint64_t)>* on_read = nullptr);
  EntrySource(const EntrySource&) = delete;
  EntrySource& operator=(const EntrySource&) = delete;

  // A libzip source reading this entry; this object must outlive it.
  // Errors: kInternal.
  Result<SourcePtr> MakeSource();

  // If this entry is a stored file of FileCopier::kMinFile bytes or more,
  // adds it to `copier` (which must outlive this object's use by libzip)
  // and takes its bytes from there. Before zip_close.
  void UseCopier(FileCopier* copier);

  // Why a read failed, with details libzip does not keep; OK if none did.
  const Status& error() const { return error_; }

 private:
  static zip_int64_t Callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd);
  zip_int64_t Handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd);
  zip_int64_t Fail(Status s, int zip_code);
  Status Open();
  // Lets go of the file, the buffers and the copier's piece.
  void Close();
  // Reads up to `n` bytes into `out`; 0 only at the end of the entry.
  Result<std::size_t> Read(std::byte* out, std::size_t n);
  // Points chunk_ at the next bytes of the entry (and writes them through).
  Status Refill();
  Result<ByteView> NextFromStream();
  Result<ByteView> NextFromFile(std::size_t want);
  Status CheckFileEnd();
  // A piece of a FileCopier's copy (the previous one handed back).
  Result<ByteView> NextFromCopier();

  EntryData data_;
  const Spool* spool_;
  ZipOutput* output_;
  const std::function<void(std::uint64_t)>* on_read_;
  bool write_through_ = false;
  UniqueFd fd_;
  std::vector<std::byte> buffer_;
  std::string produced_;  // what data_.produce returned
  ByteView chunk_;        // the bytes being handed to libzip
  std::size_t chunk_pos_ = 0;
  std::uint64_t fetched_ = 0;  // bytes of the entry in chunks so far
  Status error_;
  LibzipError zip_error_;
};

}  // namespace carton::zip_internal

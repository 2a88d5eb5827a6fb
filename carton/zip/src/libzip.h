// Private: RAII owners for libzip handles and the mapping from libzip's
// error codes to Status, shared by ZipReader and ZipWriter.
//
// Each owner frees its handle in its destructor; a zip_t is discarded
// (never written). Not thread-safe: libzip handles are used by one thread
// at a time.
#pragma once

#include <zip.h>

#include <memory>
#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton::zip_internal {

struct ArchiveDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ArchivePtr = std::unique_ptr<zip_t, ArchiveDiscard>;

struct SourceFree {
  void operator()(zip_source_t* s) const { zip_source_free(s); }
};
using SourcePtr = std::unique_ptr<zip_source_t, SourceFree>;

struct FileClose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using FilePtr = std::unique_ptr<zip_file_t, FileClose>;

// A zip_error_t that is finalised on destruction.
class LibzipError {
 public:
  LibzipError() { zip_error_init(&error_); }
  LibzipError(const LibzipError&) = delete;
  LibzipError& operator=(const LibzipError&) = delete;
  ~LibzipError() { zip_error_fini(&error_); }
  zip_error_t* get() { return &error_; }

 private:
  zip_error_t error_;
};

// What libzip says about `error`, lowercase: "crc error", "not a zip
// archive", ...
std::string DescribeLibzipError(zip_error_t* error);

// An error libzip reported while reading an untrusted archive: kCorrupt for
// damaged data, kUnsupported for features carton does not read (multi-disk,
// unknown compression or encryption), kIoError for running out of memory.
// The message is `context` (may be empty), ": " and DescribeLibzipError.
Status ReadError(zip_error_t* error, std::string_view context);

// An error libzip reported while writing: kIoError for the operating
// system's failures (and memory), kInternal for the rest, which only a bug
// in carton causes.
Status WriteError(zip_error_t* error, std::string_view context);

}  // namespace carton::zip_internal

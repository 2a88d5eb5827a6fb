// LINKS in cartons: moving files between a carton's zip and the URLs of
// its LINKS (Shrink, FetchLinked). Reading LINKS, checking which files it
// covers and resolving linked files through the blob cache is the carton
// reader's (reader.h). Rules in carton/FORMAT.md, section "LINKS".
//
// A carton's MANIFEST lists every file; a file missing from the zip is
// "linked": LINKS maps its sha256 to URLs. Linked files are fetched into
// the content-addressed blob cache (links/blob_cache.h), verified by sha256
// before they become visible, and used from there. Neither Shrink nor
// FetchLinked changes MANIFEST, so the manifest hash stays the same.
//
// Every input is untrusted; every output is written to a temporary name and
// renamed into place only on success. Thread-safety: the functions may run
// concurrently on different outputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/reader.h"
#include "carton/carton/source.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/links/links.h"
#include "carton/manifest/sha256.h"
#include "carton/zip/compression.h"

namespace carton {

// Pre-compressed copies Shrink can write beside each blob, for servers that
// send them with a Content-Encoding.
enum class BlobEncoding : std::uint8_t { kZstd, kBrotli, kGzip };
// "zstd", "br", "gzip"; and the file suffix ".zst", ".br", ".gz".
std::string_view BlobEncodingName(BlobEncoding e);
std::string_view BlobEncodingSuffix(BlobEncoding e);
// Parses "zstd", "br" or "gzip". Errors: kInvalidArgument.
Result<BlobEncoding> ParseBlobEncoding(std::string_view name);

struct ShrinkOptions {
  // Each moved file gets the URL `url_prefix` + "/" + <sha256 hex> (one
  // trailing '/' of the prefix is dropped). Required unless `urls` is set.
  std::string url_prefix;
  // Where the blobs are written, named by their sha256: the files to upload
  // to `url_prefix`. Created if missing. Required unless `urls` is set.
  std::string blobs_dir;
  // Instead of the above: exactly the files with these sha256s leave the
  // zip, listed in LINKS with these URLs (the blobs already live there, so
  // none is written; min_size and encodings are not used). Each sha256 must
  // name a file that can leave (kInvalidArgument otherwise).
  std::map<manifest::Digest, std::vector<std::string>> urls;
  // Files of at least this many bytes leave the zip. carton.toml and
  // tensor_data/index.toml always stay (they are the metadata `carton info`
  // reads).
  std::uint64_t min_size = std::uint64_t{1} << 20;
  // Pre-compressed copies to write beside each blob (<sha256>.zst, ...).
  std::vector<BlobEncoding> encodings;
  // If set, called with the bytes of the carton's files read so far (into
  // the new zip or the blobs directory) and their total.
  ProgressFn progress;
};

struct ShrinkReport {
  std::vector<std::string> moved;  // paths that left the zip
  std::uint64_t moved_bytes = 0;
  std::uint64_t blobs_written = 0;  // distinct sha256s (dedup'd)
  manifest::Digest manifest_hash{};
};

// Writes `out_path`: the carton `in` (read whole) without its files of
// at least min_size bytes, each now listed in LINKS (merged with any LINKS
// the input had); MANIFEST is copied byte for byte. The blobs go to
// blobs_dir. Input files present in the zip are checked against MANIFEST
// as they are copied. Errors: kInvalidArgument (options), kCorrupt (bad
// input: MANIFEST, LINKS, hash mismatch, naming the file), kIoError, and
// the source's errors (a URL's download, a pull).
Result<ShrinkReport> Shrink(CartonSource& in, const std::string& out_path,
                            const ShrinkOptions& options);

struct FetchLinkedOptions {
  // Method for the files brought into the zip.
  Compression compression = Compression::kStored;
  // If set, called with the bytes written into the new carton so far and
  // their total, once every linked file is fetched (downloads draw their
  // own line as the source's network rules say).
  ProgressFn progress;
};

struct FetchLinkedReport {
  std::vector<std::string> fetched;  // paths brought into the zip
  std::uint64_t fetched_bytes = 0;
  manifest::Digest manifest_hash{};
};

// Writes `out_path`: the carton `in` (read whole) with every linked file
// inside its zip (fetched through the blob cache and verified) and no LINKS;
// MANIFEST is copied byte for byte, so the manifest hash is unchanged.
// Errors: kCorrupt (bad input, a file LINKS does not cover), fetch errors
// naming the file and each URL's failure, kIoError.
Result<FetchLinkedReport> FetchLinked(CartonSource& in, const std::string& out_path,
                                      const FetchLinkedOptions& options = {});

}  // namespace carton

// LINKS in cartons: reading cartons given by URL, resolving linked files
// through the blob cache, and moving files between a carton's zip and the
// URLs of its LINKS (Shrink, FetchLinked). Rules in carton/FORMAT.md,
// section "LINKS".
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/zip.h"
#include "carton/common/status.h"
#include "carton/links/fetch.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"

namespace carton {

// How linked files, and cartons given by URL, are fetched.
struct LinkOptions {
  // Retries, timeouts, progress, and allow_file_links: file:// URLs in LINKS
  // are refused unless set (a carton from elsewhere must not read local
  // files).
  links::FetchOptions fetch;
  // The blob cache root; empty means links::DefaultCacheDir().
  std::string cache_dir;
};

// True when `location` is an http:// or https:// URL (any case) rather
// than a path.
bool IsCartonUrl(std::string_view location);

// Opens a carton for reading: a path with ZipReader::Open (mapped), a URL
// with HTTP range requests (ZipReader::OpenSource over
// links::HttpRangeSource), which reads only the tail, the central directory
// and the entries asked for. Errors: those of ZipReader::Open and
// HttpRangeSource::Open (kUnsupported when the server ignores Range).
// `zip` sets the archive limits (zip bombs; see zip.h).
Result<ZipReader> OpenCarton(const std::string& location, const LinkOptions& options = {},
                             const ZipReaderOptions& zip = {});

// A carton as a local file: the path itself, or a URL downloaded to a
// temporary file in `temp_dir` (removed when this object is destroyed).
class LocalCarton {
 public:
  // Errors: those of links::DownloadToFile.
  static Result<LocalCarton> Make(const std::string& location, const std::string& temp_dir,
                                  const LinkOptions& options = {});
  LocalCarton(LocalCarton&& o) noexcept;
  LocalCarton& operator=(LocalCarton&& o) noexcept;
  LocalCarton(const LocalCarton&) = delete;
  LocalCarton& operator=(const LocalCarton&) = delete;
  ~LocalCarton();
  const std::string& path() const { return path_; }

 private:
  LocalCarton() = default;
  std::string path_;
  bool temporary_ = false;
};

// The parsed LINKS of an archive, or nullopt when it has none.
// Errors: kCorrupt/kUnsupported from links::ParseLinks (message starts
// "LINKS"), and read errors naming the entry. `limits` bounds the text.
Result<std::optional<links::Links>> ReadLinks(const ZipReader& zip,
                                              const links::LinksLimits& limits = {});

// MANIFEST entries that are not files in the zip, with the URLs LINKS gives
// for each. Errors: kCorrupt naming the first such file that LINKS does not
// cover ("... is not in the archive and LINKS has no url for its sha256"),
// or the first LINKS hash that names no MANIFEST file (StrayLinksHash).
struct LinkedFile {
  std::string path;
  manifest::Digest sha256{};
  std::vector<std::string> urls;
};
Result<std::vector<LinkedFile>> LinkedFiles(const ZipReader& zip, const manifest::Manifest& m,
                                            const std::optional<links::Links>& links);

// The rule a LINKS hash that names no MANIFEST file breaks, for messages
// about the entry LINKS: "sha256 <hex> names no file in MANIFEST (...)".
std::string StrayLinksHash(const manifest::Digest& digest);

// The cached copy of a linked file: a cache hit (rehashed when `rehash`),
// or a fetch from its URLs into the cache. Errors: those of
// links::BlobCache::Fetch (callers add the file's path).
Result<std::string> ResolveLinkedFile(const LinkedFile& file, const LinkOptions& options,
                                      bool rehash);

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
  // trailing '/' of the prefix is dropped). Required.
  std::string url_prefix;
  // Where the blobs are written, named by their sha256: the files to upload
  // to `url_prefix`. Created if missing. Required.
  std::string blobs_dir;
  // Files of at least this many bytes leave the zip. carton.toml and
  // tensor_data/index.toml always stay (they are the metadata `carton info`
  // reads).
  std::uint64_t min_size = std::uint64_t{1} << 20;
  // Pre-compressed copies to write beside each blob (<sha256>.zst, ...).
  std::vector<BlobEncoding> encodings;
  LinkOptions link;  // for an input given by URL
};

struct ShrinkReport {
  std::vector<std::string> moved;  // paths that left the zip
  std::uint64_t moved_bytes = 0;
  std::uint64_t blobs_written = 0;  // distinct sha256s (dedup'd)
  manifest::Digest manifest_hash{};
};

// Writes `out_path`: the carton at `in` (path or URL) without its files of
// at least min_size bytes, each now listed in LINKS (merged with any LINKS
// the input had); MANIFEST is copied byte for byte. The blobs go to
// blobs_dir. Input files present in the zip are checked against MANIFEST
// as they are copied. Errors: kInvalidArgument (options), kCorrupt (bad
// input: MANIFEST, LINKS, hash mismatch, naming the file), kIoError, and
// fetch errors for a URL input.
Result<ShrinkReport> Shrink(const std::string& in, const std::string& out_path,
                            const ShrinkOptions& options);

struct FetchLinkedOptions {
  // Method for the files brought into the zip.
  Compression compression = Compression::kStored;
  LinkOptions link;
};

struct FetchLinkedReport {
  std::vector<std::string> fetched;  // paths brought into the zip
  std::uint64_t fetched_bytes = 0;
  manifest::Digest manifest_hash{};
};

// Writes `out_path`: the carton at `in` (path or URL) with every linked file
// inside its zip (fetched through the blob cache and verified) and no LINKS;
// MANIFEST is copied byte for byte, so the manifest hash is unchanged.
// Errors: kCorrupt (bad input, a file LINKS does not cover), fetch errors
// naming the file and each URL's failure, kIoError.
Result<FetchLinkedReport> FetchLinked(const std::string& in, const std::string& out_path,
                                      const FetchLinkedOptions& options = {});

}  // namespace carton

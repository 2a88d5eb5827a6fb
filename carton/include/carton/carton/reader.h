// CartonReader: the one way every operation reads a .carton's archive (info,
// hash, verify, unpack, shrink, fetch, push and the loader), through the
// source of its location (source.h), which opens it.
//
// It reads an archive from a mapped file or any RandomAccessSource (a file
// read with pread, a URL read with range requests) what the operations
// share, once each: MANIFEST (its bytes, its lines, its hash), LINKS (and
// which MANIFEST files it covers), and the entry rules of carton/FORMAT.md
// "Reading a carton". Nothing is read before it is asked for, so a reader
// of the manifest hash by URL fetches the zip's tail, its central directory
// and MANIFEST, and no more. Extraction of a file, its sha256 checked
// against MANIFEST as it is written, lives here too (ExtractTo), for unpack,
// shrink and the loader's cache.
//
// Every input is untrusted. Statuses from the Read*() steps do not name the
// carton; Check() and the operations add location(). Rules are also
// reported all at once (EntryProblems, LinkProblems) for Verify, which
// lists every problem.
//
// Ownership: a CartonReader owns its ZipReader and what it has read; the
// file or source it reads is shared with it.
// Move-only. Thread-safety: the Read*() steps and Check() are not
// thread-safe; once done, the const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/environment.h"
#include "carton/carton/limits.h"
#include "carton/common/mapped_file.h"
#include "carton/common/progress.h"
#include "carton/common/random_access.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"
#include "carton/links/links.h"
#include "carton/manifest/manifest.h"
#include "carton/zip/reader.h"

namespace carton {

// MANIFEST as read from a carton: its exact bytes (copied verbatim by
// shrink and fetch, so the manifest hash stays), its lines, and its hash.
struct ManifestFile {
  std::string text;
  manifest::Manifest manifest;
  manifest::Digest hash{};
};

// One broken rule of a carton: the entry at fault and the rule.
struct CartonProblem {
  std::string where;
  std::string message;
  StatusCode code = StatusCode::kCorrupt;  // kUnsupported for a method
  // code, "<where>: <message>".
  Status ToStatus() const;
};

// A MANIFEST file that is not in the zip, and the URLs LINKS gives for it.
struct LinkedFile {
  std::string path;
  manifest::Digest sha256{};
  std::vector<std::string> urls;
};

// The rule a LINKS hash that names no MANIFEST file breaks, for messages
// about the entry LINKS: "sha256 <hex> names no file in MANIFEST (...)".
std::string StrayLinksHash(const manifest::Digest& digest);

// The cached copy of a linked file: a cache hit (rehashed when `rehash`),
// or a fetch from its URLs into the blob cache of `environment`, with its
// network rules (progress labelled with the file's path; `progress`, when
// set, gets it instead). Errors: those of links::BlobCache::Fetch (callers
// add the file's path).
Result<std::string> ResolveLinkedFile(const LinkedFile& file, const Environment& environment,
                                      bool rehash, const ProgressFn& progress = {});

class CartonReader {
 public:
  // Reads through `source`, fetching only what is read (messages name
  // source->name()). Errors: those of ZipReader::OpenSource.
  static Result<CartonReader> OpenSource(std::unique_ptr<RandomAccessSource> source,
                                         const CartonLimits& limits = {});

  // Over a file already mapped, which the reader shares. `manifest`, when
  // given, is this carton's MANIFEST as read already (through OpenSource
  // over the same file, or by range requests of the URL it was downloaded
  // from) and is used instead of reading it again. `location` names the
  // carton in messages (default: the file's path). Errors: those of
  // ZipReader::OpenFile.
  static Result<CartonReader> OpenFile(std::shared_ptr<const MappedFile> file,
                                       const CartonLimits& limits = {},
                                       std::shared_ptr<const ManifestFile> manifest = nullptr,
                                       std::string location = "");

  CartonReader(CartonReader&&) noexcept;
  CartonReader& operator=(CartonReader&&) noexcept;
  CartonReader(const CartonReader&) = delete;
  CartonReader& operator=(const CartonReader&) = delete;
  ~CartonReader();

  // The carton as the caller named it (path or URL): the prefix of
  // messages.
  const std::string& location() const;
  const ZipReader& zip() const;
  const CartonLimits& limits() const;

  // Reads and parses MANIFEST (at most limits().max_manifest_size bytes,
  // refused before decoding) and hashes its bytes. Only the first call
  // reads; later calls return its result. Errors: kCorrupt
  // ("MANIFEST: missing", over the limit, or not a valid MANIFEST), and read
  // errors naming the entry.
  Status ReadManifest();
  // REQUIRES: ReadManifest() succeeded.
  const ManifestFile& manifest_file() const;
  const manifest::Manifest& manifest() const { return manifest_file().manifest; }
  std::shared_ptr<const ManifestFile> shared_manifest() const;

  // Reads and parses LINKS, if the zip has one. Only the first call reads.
  // Errors: kCorrupt/kUnsupported from links::ParseLinks (messages start
  // "LINKS"), read errors naming the entry.
  Status ReadLinks();
  // The parsed LINKS; nullopt when there is none (or it did not parse).
  const std::optional<links::Links>& links() const;

  // The entry rules that need no file data but a symlink entry's small
  // target (carton/FORMAT.md, "Reading a carton"): a symlink entry must
  // resolve (ResolveSymlinkEntry; with MANIFEST when it has been read); no
  // encrypted entries; only stored, deflate and zstd; when MANIFEST has been
  // read, every file entry but MANIFEST and LINKS is listed in it. Every
  // problem, in entry order.
  std::vector<CartonProblem> EntryProblems() const;

  // The LINKS rules (carton/FORMAT.md K1-K3): every MANIFEST file missing
  // from the zip is covered by LINKS, and every LINKS hash names a MANIFEST
  // file. Every problem (the uncovered files in MANIFEST order, then the
  // stray hashes), and fills linked_files() with the covered ones.
  // REQUIRES: ReadManifest() succeeded; ReadLinks() was called.
  std::vector<CartonProblem> LinkProblems();
  // MANIFEST files not in the zip, with their URLs, in MANIFEST order.
  const std::vector<LinkedFile>& linked_files() const { return linked_files_; }

  // Reads and parses carton.toml (at most limits().config.max_size bytes,
  // every rule of ParseConfig) and tensor_data/index.toml when there is
  // one (ParseIndex). Only the first call reads. Errors: kCorrupt
  // ("carton.toml: missing", over the limit, invalid; the same for
  // index.toml), kUnsupported, read errors naming the entry.
  Status ReadMetadata();
  // REQUIRES: ReadMetadata() succeeded.
  const CartonConfig& config() const { return *config_; }
  const std::optional<TensorDataIndex>& tensor_index() const { return tensor_index_; }

  // What a reader that refuses a bad carton checks, stopping at the first
  // problem: ReadManifest, EntryProblems, ReadLinks, LinkProblems,
  // ReadMetadata: every path that reads a carton (info, unpack, fetch,
  // shrink, push, load) holds it to the same rules as verify. Each status
  // names location(). kCorrupt, or kUnsupported for an unknown compression
  // method, LINKS version or spec version.
  Status Check();

  // Entry `name` as text, at most `limit` bytes (refused before decoding).
  // kNotFound if absent; errors name the entry.
  Result<std::string> ReadText(std::string_view name, std::uint64_t limit) const;

  // The entry holding the bytes of file `name`: itself, or the target of a
  // symlink entry. Errors: kNotFound, those of ResolveSymlinkEntry.
  Result<std::string> DataEntry(const std::string& name) const;

  // Extracts file `name` of MANIFEST (a symlink entry: its target's bytes)
  // into a new file at `dest`, hashing the bytes as they are decoded and
  // written: the file appears (renamed into place) only when their sha256
  // is MANIFEST's. "MANIFEST" itself is written from the bytes read.
  // REQUIRES: ReadManifest() succeeded. Errors: kCorrupt (bad data, or
  // manifest::CheckDigest's mismatch naming `name`), kUnsupported,
  // kNotFound (not in MANIFEST or not in the zip), kIoError. `on_bytes`,
  // when set, gets the size of each chunk written.
  Status ExtractTo(const std::string& name, const std::string& dest,
                   const std::function<void(std::uint64_t)>& on_bytes = {}) const;

 private:
  CartonReader(std::string location, ZipReader zip, const CartonLimits& limits);

  std::string location_;
  ZipReader zip_;
  CartonLimits limits_;
  std::optional<Status> manifest_status_;
  std::shared_ptr<const ManifestFile> manifest_;
  std::optional<Status> links_status_;
  std::optional<links::Links> links_;
  std::optional<Status> metadata_status_;
  std::optional<CartonConfig> config_;
  std::optional<TensorDataIndex> tensor_index_;
  std::vector<LinkedFile> linked_files_;
};

}  // namespace carton

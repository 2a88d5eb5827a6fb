// CartonSource: a carton wherever it is, behind one interface that every
// operation reading a carton takes (info, hash, ls, cat, diff, verify,
// unpack, fetch, shrink, push, load). There is one source per kind of
// location:
//
//   a .carton file     mapped; its MANIFEST read first with pread through the
//                      end records and the central directory
//   an http(s) URL     read with range requests, or downloaded whole into the
//                      cache (resumable) when every byte will be read
//   a directory        an unpacked carton or a cache entry (only the loader
//                      reads one: the others refuse it by name)
//   oci://...          registered by the OCI module (oci/source.h)
//
// and OpenSource is the one place that picks it, from the location's kind.
// A new kind of location is one new source, registered in the Environment
// (SourceKinds). Nothing is read before it is asked for, and what is read is
// read once: a load's cache hit costs MANIFEST alone, and a miss reads the
// rest through the same file or download.
//
// Every byte read is untrusted. Ownership: a source owns what it reads and
// every temporary copy it makes (a URL downloaded whole, an artifact pulled),
// each removed with the source (and by SIGINT/SIGTERM, common/temporaries.h);
// pointers it returns borrow from it. Thread-safety: not thread-safe; one
// source per operation.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "carton/carton/environment.h"
#include "carton/carton/info.h"
#include "carton/carton/limits.h"
#include "carton/carton/location.h"
#include "carton/carton/reader.h"
#include "carton/common/mapped_file.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"
#include "carton/sign/policy.h"

namespace carton {

// How much of the archive an operation will read.
enum class ReadScope : std::uint8_t {
  // Some entries: a URL is read with range requests (the zip's tail, its
  // central directory, the entries read), a file through its mapping.
  kEntries,
  // Every byte: a URL is downloaded whole first (into the cache's
  // downloads/, resumed by the next download of the same carton), an
  // oci:// reference pulled.
  kWhole,
  // kWhole, for a caller that holds links::CacheLayout::CartonLockPath(the
  // manifest hash) exclusively (the loader's materialize lock): a URL's
  // download then takes no lock of its own, as it otherwise does to keep two
  // downloads of one carton apart.
  kWholeUnderCartonLock,
};

// A signature kept with a carton, as stored (carton/signature.h): its
// bytes, untrusted until parsed and verified, and where they were found
// (a file's path, or an OCI referrer's reference) for messages.
struct KeptSignature {
  std::string where;
  std::string bytes;
};

// The per-operation settings of a source.
struct SourceOptions {
  // The operation, as a refusal names it ("verify", "ls": "ls takes a
  // .carton file, an http(s) URL or an oci:// reference; DIR is a
  // directory"); empty: "reading a .carton".
  std::string operation;
  // Bounds on the archive and the entries it reads (limits.h).
  CartonLimits limits;
  // A download's progress (a URL read whole, an artifact pulled) with its
  // bytes so far and total; unset: a line on stderr when
  // Environment::network.show_progress says so and stderr is a terminal.
  ProgressFn progress;
};

class CartonSource {
 public:
  virtual ~CartonSource();
  CartonSource(const CartonSource&) = delete;
  CartonSource& operator=(const CartonSource&) = delete;

  // The carton as the user named it: messages name it by location().text().
  const Location& location() const { return location_; }
  const Environment& environment() const { return environment_; }
  const SourceOptions& options() const { return options_; }

  // The manifest hash, as cheaply as the kind allows: MANIFEST through the
  // end records and central directory of a file (pread) or a URL (range
  // requests), the MANIFEST layer's digest an OCI manifest names. Errors:
  // those of Reader(kEntries) and CartonReader::ReadManifest (naming the
  // carton); a directory is refused by name.
  virtual Result<manifest::Digest> ManifestHash();

  // MANIFEST (its bytes, lines and hash), as cheaply as the kind allows:
  // as ManifestHash reads it, or an OCI artifact's MANIFEST blob. Only the
  // first call reads. Errors: as ManifestHash.
  virtual Result<std::shared_ptr<const ManifestFile>> Manifest();

  // Where a signature of this carton is kept as a file (carton/FORMAT.md
  // "Signatures"): "<file>.sig" beside a .carton file, "<dir>/model.sig"
  // in a directory; "" for a URL, and for an oci:// reference (a registry
  // keeps its signature as a referrer of the carton's manifest).
  virtual std::string SignaturePath() const { return ""; }

  // The signature kept with the carton: the file at SignaturePath(), or
  // the newest OCI referrer that lists exactly this carton's MANIFEST
  // files; nullopt when there is none. Errors: reading it (kIoError), a
  // registry's failure (kNetworkError), those of Manifest() for a
  // referrer.
  virtual Result<std::optional<KeptSignature>> Signature();

  // The carton as a trust policy's scopes match it (sign/policy.h): an
  // absolute, lexically normal path; the URL; the registry and repository.
  virtual sign::TrustTarget TrustTarget() const;

  // carton.toml, MANIFEST, the files and the tensor index (info.h
  // CartonInfo), reading only those (by range requests for a URL, an OCI
  // artifact's small blobs). Errors: as ReadInfo (info.h), naming the
  // carton; a directory is refused by name.
  virtual Result<CartonInfo> Info();

  // The archive, opened once per scope: a later call with the same scope,
  // or kEntries after a whole read, returns the same reader. The reader has not
  // been checked (CartonReader::Check); messages from it name the carton.
  // Valid while the source lives. Errors: kNotFound, kIoError, kCorrupt,
  // kUnsupported, kNetworkError; a directory is refused by name.
  virtual Result<CartonReader*> Reader(ReadScope scope) = 0;

  // The archive's local file (mapped), once a whole Reader has succeeded:
  // the .carton file itself, or the download or pull. Null otherwise.
  virtual std::shared_ptr<const MappedFile> file() const { return nullptr; }

  // The directory of a directory source; "" for every other kind.
  virtual const std::string& directory() const;

  // The refusal of options().operation for a location it cannot read:
  // "<operation> takes a .carton file, an http(s) URL or an oci://
  // reference; <location> is <what>".
  Status Refuse(std::string_view what) const;

 protected:
  CartonSource(Location location, const Environment& environment, SourceOptions options);
  // environment().network with options().progress, for a download of this
  // carton labelled with its location.
  net::FetchOptions DownloadFetchOptions() const;

 private:
  Location location_;
  Environment environment_;
  SourceOptions options_;
};

// Makes the source of `location`'s kind: the one place that switches on
// Location::Kind. Opening reads nothing (a directory is checked to exist).
// Errors: location.status(); kInvalidArgument for a kind no source in
// `environment` reads ("oci:// references need the OCI source: ...").
Result<std::unique_ptr<CartonSource>> OpenSource(const Location& location,
                                                 const Environment& environment,
                                                 const SourceOptions& options = {});

// The source of the .carton file at `path`, named `named` in messages: a
// local copy of a carton from elsewhere (an artifact pulled, say), read as
// a file is. The file must outlive the source.
std::unique_ptr<CartonSource> OpenFileCopy(const Location& named, std::string path,
                                           const Environment& environment,
                                           const SourceOptions& options = {});

// Makes the source of one kind of location.
using SourceFactory = std::function<Result<std::unique_ptr<CartonSource>>(
    const Location&, const Environment&, const SourceOptions&)>;

// The kinds of location an Environment reads beyond the built-in ones.
// Immutable once made. Thread-safety: const methods may be called
// concurrently.
class SourceKinds {
 public:
  // `base`'s kinds (none when null) with `factory` for `kind`, replacing one
  // `base` has for it.
  static std::shared_ptr<const SourceKinds> With(std::shared_ptr<const SourceKinds> base,
                                                 Location::Kind kind, SourceFactory factory);
  // The factory for `kind`; nullptr when none is registered.
  const SourceFactory* Find(Location::Kind kind) const;

 private:
  std::vector<std::pair<Location::Kind, SourceFactory>> factories_;
};

}  // namespace carton

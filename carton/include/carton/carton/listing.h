// Looking into a .carton file by file, without unpacking it: the list of
// its files (ListEntries), one file's bytes checked against MANIFEST
// (ReadCartonFile), and the difference between two cartons' MANIFESTs
// (DiffManifests, DiffCartons).
//
// Every carton is untrusted input: it is checked (CartonReader::Check)
// before anything is reported. Each reads its source's entries
// (ReadScope::kEntries: a URL by range requests, an oci:// reference
// pulled). Nothing is written but linked files fetched into the blob cache
// by ReadCartonFile.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/source.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"

namespace carton {

// One file of a carton, as MANIFEST lists it.
struct CartonEntry {
  std::string path;
  manifest::Digest sha256{};
  // The zip entry holding the bytes (for a symlink entry, its target's),
  // absent for a linked file: sizes and method are then unknown (0, "").
  std::uint64_t size = 0;
  std::uint64_t compressed_size = 0;
  std::string method;                         // "stored", "deflate", "zstd"
  bool linked = false;                        // not in the zip; fetched through LINKS
  std::vector<std::string> urls;              // LINKS' URLs for a linked file
  std::optional<std::string> symlink_target;  // a symlink entry: the file it names
};

// Every file MANIFEST lists (MANIFEST and LINKS themselves are not), in
// MANIFEST order. Reads the central directory, MANIFEST, LINKS and symlink
// targets only. Errors: those of CartonSource::Reader and Check(), naming
// the carton.
Result<std::vector<CartonEntry>> ListEntries(CartonSource& source);

// Streams the bytes of file `path` (as MANIFEST names it; a symlink entry
// gives its target's bytes; a linked file is fetched through the blob
// cache; "MANIFEST" gives MANIFEST itself, as read) to `sink`, in pieces,
// hashing them. The sink has seen every byte
// before the sha256 is compared: a kCorrupt result after a successful sink
// means the bytes it got are not MANIFEST's, and callers that must not
// show them buffer first. Errors: kNotFound "<location>: <path>: not in
// MANIFEST", kCorrupt (a hash mismatch naming the file), those of the
// carton's checks, of decoding and of fetching; and whatever the sink
// returns.
Status ReadCartonFile(CartonSource& source, const std::string& path,
                      const std::function<Status(ByteView)>& sink);

// What changed from MANIFEST `a` to MANIFEST `b`, by path and sha256.
struct CartonDiff {
  manifest::Digest a_hash{};
  manifest::Digest b_hash{};
  std::vector<manifest::ManifestEntry> added;    // in b only
  std::vector<manifest::ManifestEntry> removed;  // in a only
  struct Changed {
    std::string path;
    manifest::Digest a_sha256{};
    manifest::Digest b_sha256{};
  };
  std::vector<Changed> changed;  // in both, other bytes
  // Same manifest hash: the same files with the same bytes.
  bool identical() const { return a_hash == b_hash; }
};

// Each list in path order; the hashes are those of `a` and `b`.
CartonDiff DiffManifests(const manifest::Manifest& a, const manifest::Manifest& b);

// DiffManifests of the two cartons' MANIFESTs (each carton checked first).
// Errors: those of ListEntries, naming the carton at fault.
Result<CartonDiff> DiffCartons(CartonSource& a, CartonSource& b);

}  // namespace carton

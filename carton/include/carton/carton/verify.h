// Verifying a .carton: every rule of the format, every hash.
//
// "The answer is no" is a value: Verify() returns a report listing every
// problem it found (not just the first); a non-OK Status means verification
// could not run at all (missing file, I/O error). Input is untrusted.
//
// Checks: the zip structure and entry names (no absolute paths, "..",
// backslashes, duplicates; symlink entries only as symlink.h allows);
// carton.toml; MANIFEST well-formed and listing every entry except MANIFEST and LINKS, and nothing
// else; each file's SHA-256 (hashed on all cores); tensor_data/index.toml and each referenced
// tensor present with the right size; every @tensor_data/ and
// @misc/ reference resolvable; self_test and example tensor names matching
// the declared inputs and outputs. LINKS: valid (links/FORMAT.md), covering
// every MANIFEST file missing from the zip, and naming no other hash; with
// fetch_links, those files are fetched through the blob cache and hashed
// too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "carton/carton/source.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton {

struct VerifyProblem {
  std::string where;    // the entry or file at fault ("" for the archive)
  std::string message;  // the rule broken and the values
};

struct VerifyReport {
  std::vector<VerifyProblem> problems;
  std::optional<manifest::Digest> manifest_hash;  // when MANIFEST was readable
  std::uint64_t files_hashed = 0;
  std::uint64_t bytes_hashed = 0;
  std::uint64_t linked_files = 0;    // MANIFEST files covered by LINKS
  std::uint64_t linked_fetched = 0;  // of those, fetched and hashed
  // Not problems: carton.toml keys that spec v1 does not define (ignored),
  // one line each, "carton.toml:3:1: unknown key ...".
  std::vector<std::string> warnings;
  bool ok() const { return problems.empty(); }
};

struct VerifyOptions {
  // Fetch linked files through the blob cache and hash them; a cached copy
  // is rehashed. Without this they are only checked to be covered by LINKS.
  bool fetch_links = false;
  // If set, called (from the hashing threads) with the bytes of the
  // archive's files hashed so far and their total.
  ProgressFn progress;
};

// The archive is read whole (ReadScope::kWhole: a URL is downloaded into
// the cache first, an oci:// reference pulled), hashed on
// carton.environment().threads threads, and held to the source's limits
// (breaking one is a problem in the report). Errors: kNotFound, kIoError,
// and download errors. A corrupt archive, and a linked file that cannot be
// fetched or has the wrong hash, are problems in the report, not errors.
Result<VerifyReport> Verify(CartonSource& carton, const VerifyOptions& options = {});

}  // namespace carton

// Unpacking a carton into a directory of files, every file checked against
// MANIFEST. Input is untrusted.
#pragma once

#include <string>

#include "carton/carton/source.h"
#include "carton/common/progress.h"
#include "carton/common/status.h"

namespace carton {

// Extracts every file of the carton into `dir`, which must not exist or be
// empty; an empty `dir` means ./<model_name> (carton.toml's, when it is a
// plain file name), else ./<the carton's file name without extension>.
// Returns the directory written. `dir`, when given, and its parent are
// checked before anything is read or downloaded.
//
// Files are written under a temporary directory beside `dir`, each checked
// against MANIFEST as it is extracted, and the directory is renamed into
// place only when all are good: on any error `dir` is untouched and nothing
// is left behind. Entry names were validated on open, so nothing is ever
// written outside `dir`. Linked files (MANIFEST files missing from the zip)
// are fetched through the blob cache from the URLs in LINKS and checked
// like the others. The archive is read whole (ReadScope::kWhole: a URL is
// downloaded into the cache first, an oci:// reference pulled). Before
// writing anything, the entries are checked (CartonReader::Check), and
// their declared sizes
// against the free space where `dir` will be. The temporary directory is
// registered (common/temporaries.h), so a CLI interrupted by SIGINT or
// SIGTERM removes it; a process killed outright leaves it
// (".<name>.unpack-<random>") behind, never a partial `dir`; nothing
// removes it later, and it may be deleted.
//
// Errors: kCorrupt (a hash mismatch or bad entry, a linked file LINKS does
// not cover, naming it), kUnsupported (an unknown compression method),
// kInvalidArgument (dir not empty, no name to choose a default dir from,
// file links not allowed), kNotFound (dir's parent missing), kNetworkError
// (a linked file could not be fetched), kIoError (dir's parent not a
// directory, too little free space, a write that fails).
struct UnpackOptions {
  // Refuse, before writing anything, when the file system that will hold
  // `dir` has fewer free bytes than the zip's entries declare.
  bool check_free_space = true;
  // If set, called with the bytes written so far and the total (the zip's
  // files, then each linked file's size as it is copied).
  ProgressFn progress;
};
Result<std::string> Unpack(CartonSource& carton, const std::string& dir,
                           const UnpackOptions& options = {});

}  // namespace carton

// carton.lock: the Python dependencies of a model, as the original
// implementation's packager records them in `model/.carton/carton.lock`
// (runners/python/FORMAT.md "carton.lock"):
//
//   orig_deps_hash = "..."              # ignored
//   [[lockfile]]                        # one entry per environment
//   os_name = "posix"                   # PEP 508 environment markers;
//   sys_platform = "linux"              # an absent marker matches anything
//   platform_machine = "x86_64"
//   platform_python_implementation = "CPython"
//   python_version = "3.11"
//   [[lockfile.locked_deps]]            # one wheel each
//   sha256 = "<64 hex>"
//   url = "https://files.pythonhosted.org/.../numpy-...whl"
//   [[lockfile.locked_deps]]
//   sha256 = "<64 hex>"
//   bundled_whl_path = ".carton/bundled_wheels/<sha256>/<file>.whl"
//
// ParseLockfile reads untrusted text and validates all of it.
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::python_runner {

// Limits (FORMAT.md "carton.lock").
inline constexpr std::size_t kMaxLockfileSize = 4u << 20;
inline constexpr std::size_t kMaxLockfileEntries = 256;
inline constexpr std::size_t kMaxLockedDeps = 4096;

// The markers an entry may constrain, as the original's packager knows them.
// Each is compared for string equality with the interpreter's value.
const std::vector<std::string>& EnvironmentMarkerNames();

// Marker name -> value (for an entry: only the markers it constrains).
using EnvironmentMarkers = std::map<std::string, std::string>;

struct LockedDep {
  manifest::Digest sha256{};
  std::optional<std::string> url;               // http(s)
  std::optional<std::string> bundled_whl_path;  // relative to model/
  // The wheel's file name, for messages: the last part of the URL's path or
  // of bundled_whl_path.
  std::string file_name;
};

struct LockfileEntry {
  EnvironmentMarkers markers;
  std::vector<LockedDep> deps;
};

struct Lockfile {
  std::vector<LockfileEntry> entries;
};

// Parses carton.lock text. `source` prefixes every message, with
// line:column when known ("model/.carton/carton.lock:7:1: ...").
// Errors: kCorrupt for text over kMaxLockfileSize, bad TOML, a `lockfile`
// that is not an array of tables, more than kMaxLockfileEntries entries or
// kMaxLockedDeps wheels in one, a marker that is not a string, a wheel
// without a sha256 of 64 lowercase hex digits, with neither `url` nor
// `bundled_whl_path`, with a URL that is not http or https, or with a
// bundled path that is not a relative path inside model/ (no "..", no
// leading "/").
Result<Lockfile> ParseLockfile(std::string_view text, std::string_view source);

// The first entry whose every marker equals the environment's value (a
// marker the environment lacks never matches); nullptr if none does.
const LockfileEntry* MatchLockfileEntry(const Lockfile& lockfile,
                                        const EnvironmentMarkers& environment);

// "os_name=posix, sys_platform=linux, ..." for messages.
std::string DescribeMarkers(const EnvironmentMarkers& markers);

}  // namespace carton::python_runner

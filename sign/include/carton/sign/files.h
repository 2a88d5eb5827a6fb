// The file list of an OMS signature (sign/FORMAT.md "The file list"): the
// rules resource names follow, which paths are left out (ignore_paths and
// the defaults), and the comparison of what a statement lists with the
// files that are there: every listed file present with its digest, and no
// file present that is neither listed nor ignored.
//
// HashDirectory lists and hashes a directory as the reference's "files"
// method does, so a folder signed by `model_signing` verifies here.
// Thread-safe free functions.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "carton/common/status.h"
#include "carton/sign/bundle.h"
#include "carton/sign/failure.h"

namespace carton::sign {

// Left out of every file list, at the top level of the model (the
// reference's defaults): version control, not the model.
inline constexpr std::array<std::string_view, 4> kDefaultIgnorePaths = {".git", ".gitattributes",
                                                                        ".github", ".gitignore"};

// Checks a resource name or an ignore path (untrusted): a relative
// "/"-separated path of at most kMaxNameBytes, valid UTF-8, without NUL,
// without empty, "." or ".." components, not absolute. Returns OK or
// kCorrupt (Failure::kBadBundle) "<what>: ..." naming the rule and the
// name.
Status ValidateResourceName(std::string_view name, std::string_view what);
// The rule `name` breaks ("is empty", "has a \"..\" component"), or ""
// when it is a valid resource name: ValidateResourceName without building
// a message.
std::string ResourceNameProblem(std::string_view name);

// True when `path` is one of `ignore_paths` or lies below one of them (by
// whole components: "a" ignores "a/b", not "ab").
bool IsIgnored(std::string_view path, std::span<const std::string> ignore_paths);

// Sorts `resources` as the reference does: by path component ("a/b" before
// "a-b", since "a" < "a-b"), so a statement made here lists its files in
// the reference's order.
void SortByComponents(std::vector<Resource>* resources);

// One difference between a signed file list and the files present.
struct FileProblem {
  Failure failure = Failure::kTamperedFile;  // kTamperedFile, kMissingFile, kUnlistedFile
  std::string path;
  std::string message;  // "model/w.bin: sha256 <got> but the signature says <expected>"
};

// Compares the statement's resources with `present` (the files there, each
// with its digest; ignored ones already left out). Every problem: the
// tampered and missing files in the statement's order, then the unlisted
// ones in `present`'s order.
std::vector<FileProblem> CompareFiles(std::span<const Resource> listed,
                                      std::span<const Resource> present);

// OK when `problems` is empty; else kCorrupt whose detail is the first
// problem's failure and whose message gives the first few problems (and
// how many there are).
Status ProblemsStatus(std::span<const FileProblem> problems);

struct HashDirectoryOptions {
  // Left out: these paths (and what lies below them) and
  // kDefaultIgnorePaths.
  std::vector<std::string> ignore_paths;
  // Follow symlinks that stay inside the directory (a file's digest is its
  // target's); without it a symlink is an error, as the reference's
  // allow_symlinks false makes it. A symlink out of the directory is
  // always an error.
  bool allow_symlinks = false;
  // Hashing threads (0: one per core).
  unsigned threads = 0;
  // Called from the hashing threads with the size of each piece hashed.
  std::function<void(std::uint64_t)> on_bytes;
};

// Every regular file below `dir` that is not ignored, with its sha256, in
// SortByComponents order. Errors: kNotFound (no such directory),
// kInvalidArgument (a symlink when not allowed, or one leading out of
// `dir`; a socket, FIFO or device), kIoError.
Result<std::vector<Resource>> HashDirectory(const std::string& dir,
                                            const HashDirectoryOptions& options = {});

}  // namespace carton::sign

// HashFiles: the sha256 of many files at once, spread across cores.
//
// SHA-256 of one file is sequential, so the parallelism is across files: the
// files are taken largest first by a pool of worker threads, each grabbing
// the next file from a shared atomic index. The calling thread is one of
// the workers. Thread-safe: concurrent calls are independent.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "carton/common/file_identity.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::manifest {

// Workers used at most by one call.
inline constexpr unsigned kMaxHashThreads = 256;

// Returns the sha256 of each file in `paths`, in the same order. `threads` is
// the number of workers: 0 means std::thread::hardware_concurrency(); it is
// capped at the number of files and at kMaxHashThreads. Files are read with
// pread into a per-worker buffer (see hash_files.cc for why not mmap); a file
// that shrinks or grows while being read is hashed as read.
//
// With `expected` (one per path), each file must be that version of it when
// opened and when read to the end (kIoError otherwise), so the digest is of
// exactly the bytes another reader of that version sees.
//
// Every file is stat()ed first, so a missing one fails before any hashing.
// Errors: kNotFound (a file does not exist), kInvalidArgument (not a regular
// file), kIoError; the message starts with the path. When several files fail,
// the error of the one earliest in `paths` is returned; after the first
// failure no further files are started.
// `on_bytes`, when set, is called from the hashing threads with the size of
// each piece hashed (for progress displays).
Result<std::vector<Digest>> HashFiles(std::span<const std::string> paths, unsigned threads = 0,
                                      std::span<const FileIdentity> expected = {},
                                      const std::function<void(std::uint64_t)>& on_bytes = {});

}  // namespace carton::manifest

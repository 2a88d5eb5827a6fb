// HashingWriter: file output with the sha256 on a second thread. Private to
// links/src.
//
// The thread that produces the bytes (libcurl's, which also decodes the
// Content-Encoding) copies them into large buffers and writes each full
// buffer to the AtomicFile itself; a worker thread then hashes the buffer,
// so decoding and hashing run on two cores at once.
//
// Memory is bounded: kBufferCount buffers of kBufferSize bytes, allocated
// up front. Write blocks while every other buffer waits to be hashed. The
// output (an AtomicFile, or any sink taking kWriteSize pieces) must outlive
// the writer; give an AtomicFile AtomicFileOptions with buffer_size =
// kWriteSize, so that the writes reach the kernel as they are issued. Write and Finish are called
// from one thread. If a thread cannot be started, the hashing runs inline.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "carton/common/atomic_file.h"
#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/manifest/sha256.h"

namespace carton::links {

class HashingWriter {
 public:
  static constexpr std::size_t kBufferSize = std::size_t{4} << 20;
  static constexpr int kBufferCount = 4;
  // Bytes per write(2). Larger writes at page-aligned offsets made the
  // kernel's copy into the page cache up to ten times slower here
  // (docs/BENCHMARKS.md, "Fetching a linked file").
  static constexpr std::size_t kWriteSize = std::size_t{256} << 10;

  explicit HashingWriter(AtomicFile* file);
  // Writes to `sink` instead: each call gets at most kWriteSize bytes, in
  // order; a failure stops the writer as a failed file write does.
  explicit HashingWriter(std::function<Status(ByteView)> sink);
  HashingWriter(const HashingWriter&) = delete;
  HashingWriter& operator=(const HashingWriter&) = delete;
  // Stops the worker without hashing what is still queued.
  ~HashingWriter();

  // Appends `bytes`. Returns false once a write of the AtomicFile has
  // failed (the file is aborted then, and later bytes are dropped); Finish()
  // gives the error.
  bool Write(ByteView bytes);

  // Hashes `bytes` without writing them: the part of the file already on
  // disk when a download resumes. REQUIRES: no Write yet.
  void Prehash(ByteView bytes) { hasher_.Update(bytes); }

  // Writes what is buffered, waits for the hashing, and returns the sha256
  // of all bytes given to Write. Errors: the failed write (kIoError).
  // Call at most once.
  Result<manifest::Digest> Finish();

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    std::size_t size = 0;
  };

  // Writes `current_`, hands it to the worker and takes an empty buffer.
  void Flush();
  void Run();
  void StopWorker(bool hash_queued);

  std::function<Status(ByteView)> sink_;
  manifest::Sha256 hasher_;  // used by the worker only, until it is joined
  Status error_;
  Buffer current_;  // being filled by Write

  std::mutex mu_;
  std::condition_variable queued_cv_;  // a buffer was queued, or closing_
  std::condition_variable free_cv_;    // a buffer was hashed
  std::vector<Buffer> queued_;         // oldest first
  std::vector<Buffer> free_;
  bool closing_ = false;    // nothing more will be queued
  bool abandoned_ = false;  // and what is queued need not be hashed
  std::thread worker_;      // last: started once everything above exists
};

}  // namespace carton::links

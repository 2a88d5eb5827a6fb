// HashingWriter: file output with the sha256 on a second thread. Private to
// net/src.
//
// The thread that produces the bytes (libcurl's, which also decodes the
// Content-Encoding) copies them into large buffers and hands each full
// buffer to the output itself; a worker thread then hashes the buffer, so
// decoding and hashing run on two cores at once.
//
// The output is a sink that takes the bytes in kWriteSize pieces and is done
// with them when it returns (an AtomicFile, a partial file), or a sharing
// sink that takes each buffer whole and may keep it (a stream read by
// another thread): the bytes then reach it without a copy, and the writer
// reuses a buffer only once the sink and the hashing have both dropped it.
//
// Memory is bounded: a fixed number of buffers of kBufferSize bytes,
// allocated up front. Write blocks while every other buffer is queued for
// hashing or held by a sharing sink. The output must outlive the writer; a
// shared buffer may outlive it. Give an AtomicFile AtomicFileOptions with
// buffer_size = kWriteSize, so that the writes reach the kernel as they are
// issued. Write and Finish are called from one thread. If a thread cannot be
// started, the hashing runs inline.
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

namespace carton::net {

class HashingWriter {
 public:
  // Bytes per write(2). Larger writes at page-aligned offsets made the
  // kernel's copy into the page cache up to ten times slower here
  // (docs/BENCHMARKS.md, "Fetching a linked file").
  static constexpr std::size_t kWriteSize = std::size_t{256} << 10;
  // One write per buffer. Small enough that a buffer is still in the caches
  // when the hashing thread (and a sharing sink's reader) gets to it: 4 MiB
  // buffers cost a pull 5-9% more CPU, spent waiting for memory
  // (docs/BENCHMARKS.md, "Pull: buffers that are still in the cache").
  static constexpr std::size_t kBufferSize = kWriteSize;
  static constexpr int kBufferCount = 16;
  // With a sharing sink, which may hold several buffers while its reader
  // catches up.
  static constexpr int kSharedBufferCount = 32;

  // Takes `bytes` by sharing: `owner` keeps them alive and unchanged until
  // every copy of it is dropped, on any thread.
  using SharingSink = std::function<Status(std::shared_ptr<const std::byte> owner, ByteView bytes)>;

  explicit HashingWriter(AtomicFile* file);
  // Writes to `sink` instead: each call gets one buffer (at most
  // kWriteSize bytes), in order; a failure stops the writer as a failed
  // file write does.
  explicit HashingWriter(std::function<Status(ByteView)> sink);
  // Hands each buffer to `sink` whole, in order, instead.
  explicit HashingWriter(SharingSink sink);
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
  // The buffers not in use, shared with the deleters of the buffers handed
  // out, which return them here.
  struct Pool {
    std::mutex mu;
    std::condition_variable returned;
    std::vector<std::unique_ptr<std::byte[]>> free;
    void Return(std::byte* buffer);
    std::unique_ptr<std::byte[]> Take();
  };
  struct Queued {
    std::shared_ptr<const std::byte> data;
    std::size_t size = 0;
  };

  HashingWriter(std::function<Status(ByteView)> sink, SharingSink sharing, int buffer_count);
  // Hands `current_` to the output and the worker; takes an empty buffer
  // unless `last`.
  void Flush(bool last);
  void Run();
  void StopWorker(bool hash_queued);

  std::function<Status(ByteView)> sink_;
  SharingSink sharing_sink_;
  std::shared_ptr<Pool> pool_;
  manifest::Sha256 hasher_;  // used by the worker only, until it is joined
  Status error_;
  std::unique_ptr<std::byte[]> current_;  // being filled by Write
  std::size_t current_size_ = 0;

  std::mutex mu_;
  std::condition_variable queued_cv_;  // a buffer was queued, or closing_
  std::vector<Queued> queued_;         // oldest first
  bool closing_ = false;               // nothing more will be queued
  bool abandoned_ = false;             // and what is queued need not be hashed
  std::thread worker_;                 // last: started once everything above exists
};

}  // namespace carton::net

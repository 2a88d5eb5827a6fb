#include "hashing_writer.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <utility>

namespace carton::links {

HashingWriter::HashingWriter(AtomicFile* file)
    : HashingWriter([file](ByteView bytes) { return file->Write(bytes); }) {}

HashingWriter::HashingWriter(std::function<Status(ByteView)> sink) : sink_(std::move(sink)) {
  // Everything is allocated here, not in Write: Write runs inside a libcurl
  // callback, which no exception may leave.
  queued_.reserve(kBufferCount);
  free_.reserve(kBufferCount);
  current_.data = std::make_unique_for_overwrite<std::byte[]>(kBufferSize);
  for (int i = 1; i < kBufferCount; ++i) {
    free_.push_back(Buffer{std::make_unique_for_overwrite<std::byte[]>(kBufferSize), 0});
  }
  try {
    worker_ = std::thread(&HashingWriter::Run, this);
  } catch (const std::system_error&) {
    // No thread to be had: Flush hashes inline instead.
  }
}

HashingWriter::~HashingWriter() { StopWorker(/*hash_queued=*/false); }

void HashingWriter::StopWorker(bool hash_queued) {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    abandoned_ = !hash_queued;
  }
  queued_cv_.notify_one();
  worker_.join();
}

bool HashingWriter::Write(ByteView bytes) {
  while (!bytes.empty() && error_.ok()) {
    const std::size_t n = std::min(bytes.size(), kBufferSize - current_.size);
    std::memcpy(current_.data.get() + current_.size, bytes.data(), n);
    current_.size += n;
    bytes = bytes.subspan(n);
    if (current_.size == kBufferSize) Flush();
  }
  return error_.ok();
}

void HashingWriter::Flush() {
  if (current_.size == 0) return;
  for (std::size_t off = 0; off < current_.size; off += kWriteSize) {
    const std::size_t n = std::min(current_.size - off, kWriteSize);
    if (Status s = sink_(ByteView(current_.data.get() + off, n)); !s.ok()) {
      error_ = std::move(s);
      return;
    }
  }
  if (!worker_.joinable()) {
    hasher_.Update(ByteView(current_.data.get(), current_.size));
    current_.size = 0;
    return;
  }
  std::unique_lock lock(mu_);
  queued_.push_back(std::move(current_));
  queued_cv_.notify_one();
  free_cv_.wait(lock, [this] { return !free_.empty(); });
  current_ = std::move(free_.back());
  free_.pop_back();
  current_.size = 0;
}

void HashingWriter::Run() {
  for (;;) {
    Buffer buffer;
    {
      std::unique_lock lock(mu_);
      queued_cv_.wait(lock, [this] { return !queued_.empty() || closing_; });
      if (queued_.empty() || abandoned_) return;
      buffer = std::move(queued_.front());
      queued_.erase(queued_.begin());
    }
    hasher_.Update(ByteView(buffer.data.get(), buffer.size));
    {
      std::lock_guard lock(mu_);
      free_.push_back(std::move(buffer));
    }
    free_cv_.notify_one();
  }
}

Result<manifest::Digest> HashingWriter::Finish() {
  if (error_.ok()) Flush();
  StopWorker(/*hash_queued=*/true);
  if (!error_.ok()) return error_;
  return hasher_.Finish();
}

}  // namespace carton::links

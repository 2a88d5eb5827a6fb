#include "hashing_writer.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

namespace carton::net {

void HashingWriter::Pool::Return(std::byte* buffer) {
  {
    std::lock_guard lock(mu);
    // Never reallocates: `free` has room for every buffer.
    free.emplace_back(buffer);
  }
  returned.notify_one();
}

std::unique_ptr<std::byte[]> HashingWriter::Pool::Take() {
  std::unique_lock lock(mu);
  returned.wait(lock, [this] { return !free.empty(); });
  std::unique_ptr<std::byte[]> b = std::move(free.back());
  free.pop_back();
  return b;
}

HashingWriter::HashingWriter(AtomicFile* file)
    : HashingWriter([file](ByteView bytes) { return file->Write(bytes); }) {}

HashingWriter::HashingWriter(std::function<Status(ByteView)> sink)
    : HashingWriter(std::move(sink), nullptr, kBufferCount) {}

HashingWriter::HashingWriter(SharingSink sink)
    : HashingWriter(nullptr, std::move(sink), kSharedBufferCount) {}

HashingWriter::HashingWriter(std::function<Status(ByteView)> sink, SharingSink sharing,
                             int buffer_count)
    : sink_(std::move(sink)), sharing_sink_(std::move(sharing)), pool_(std::make_shared<Pool>()) {
  // Everything is allocated here, not in Write: Write runs inside a libcurl
  // callback, which no exception may leave.
  queued_.reserve(static_cast<std::size_t>(buffer_count));
  pool_->free.reserve(static_cast<std::size_t>(buffer_count));
  current_ = std::make_unique_for_overwrite<std::byte[]>(kBufferSize);
  for (int i = 1; i < buffer_count; ++i) {
    pool_->free.push_back(std::make_unique_for_overwrite<std::byte[]>(kBufferSize));
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
  queued_.clear();
}

bool HashingWriter::Write(ByteView bytes) {
  while (!bytes.empty() && error_.ok()) {
    const std::size_t n = std::min(bytes.size(), kBufferSize - current_size_);
    std::memcpy(current_.get() + current_size_, bytes.data(), n);
    current_size_ += n;
    bytes = bytes.subspan(n);
    if (current_size_ == kBufferSize) Flush(/*last=*/false);
  }
  return error_.ok();
}

void HashingWriter::Flush(bool last) {
  if (current_size_ == 0 || !error_.ok()) return;
  const std::size_t size = current_size_;
  current_size_ = 0;
  // From here on the buffer goes back to the pool when the last of the
  // sink, the worker and this function drops it.
  std::shared_ptr<const std::byte> shared;
  try {
    // Should this throw, the deleter has returned the buffer already.
    shared = std::shared_ptr<std::byte>(current_.release(),
                                        [pool = pool_](std::byte* b) { pool->Return(b); });
  } catch (const std::bad_alloc&) {
    error_ = Internal("out of memory for the download's buffers");
    return;
  }
  const ByteView bytes(shared.get(), size);
  if (Status s = sharing_sink_ ? sharing_sink_(shared, bytes) : sink_(bytes); !s.ok()) {
    error_ = std::move(s);
    return;
  }
  if (!worker_.joinable()) {
    hasher_.Update(bytes);
  } else {
    {
      std::lock_guard lock(mu_);
      queued_.push_back(Queued{std::move(shared), size});
    }
    queued_cv_.notify_one();
  }
  shared.reset();
  if (!last) current_ = pool_->Take();
}

void HashingWriter::Run() {
  for (;;) {
    Queued buffer;
    {
      std::unique_lock lock(mu_);
      queued_cv_.wait(lock, [this] { return !queued_.empty() || closing_; });
      if (queued_.empty() || abandoned_) return;
      buffer = std::move(queued_.front());
      queued_.erase(queued_.begin());
    }
    hasher_.Update(ByteView(buffer.data.get(), buffer.size));
  }
}

Result<manifest::Digest> HashingWriter::Finish() {
  Flush(/*last=*/true);
  StopWorker(/*hash_queued=*/true);
  if (!error_.ok()) return error_;
  return hasher_.Finish();
}

}  // namespace carton::net

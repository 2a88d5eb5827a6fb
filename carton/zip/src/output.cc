#include "output.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace carton::zip_internal {
namespace {

constexpr std::size_t kBufferSize = std::size_t{256} << 10;
// Writes at least this large that do not fit the buffer skip it.
constexpr std::size_t kDirectWrite = kBufferSize / 2;

}  // namespace

Result<std::unique_ptr<ZipOutput>> ZipOutput::Create(const std::string& path, bool durable) {
  if (path.empty()) return InvalidArgument("empty output path");
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) return InvalidArgument(path + ": output path names a directory");
  // The buffer below gathers libzip's writes; the file's own is not used.
  CARTON_ASSIGN_OR_RETURN(AtomicFile file,
                          AtomicFile::Create(path, {.durable = durable, .buffer_size = 0}));
  std::unique_ptr<ZipOutput> out(new ZipOutput());
  out->path_ = path;
  out->file_.emplace(std::move(file));
  out->buffer_.resize(kBufferSize);
  return out;
}

ZipOutput::~ZipOutput() { Abort(); }

Result<SourcePtr> ZipOutput::MakeSource() {
  LibzipError error;
  zip_source_t* src = zip_source_function_create(&Callback, this, error.get());
  if (src == nullptr) return WriteError(error.get(), path_);
  return SourcePtr(src);
}

void ZipOutput::Abort() { file_.reset(); }

Status ZipOutput::Flush() {
  std::size_t n = std::exchange(buffered_, 0);
  if (n == 0) return Status::Ok();
  return file_->WriteAt(buffer_start_, ByteView(buffer_.data(), n));
}

Status ZipOutput::Reserve(std::uint64_t size) {
  if (!file_) return Internal(path_ + ": reserve after commit or abort");
  Status s = file_->Preallocate(size);
  if (!s.ok()) file_.reset();  // Preallocate removed the temporary file
  return s;
}

Status ZipOutput::WriteThrough(std::uint64_t offset, ByteView data) {
  if (!file_) return Internal(path_ + ": write after commit or abort");
  if (!through_open_ || offset != through_end_ || through_end_ < position_) {
    if (offset != position_ || position_ != size_) {
      return Internal(path_ + ": entry data written through at offset " + std::to_string(offset) +
                      " while the archive is being written at " + std::to_string(position_));
    }
    through_end_ = offset;
    through_open_ = true;
  }
  // In pieces of the buffer's size, the write size measured to be cheapest.
  while (!data.empty()) {
    const ByteView piece = data.first(std::min(data.size(), buffer_.size()));
    CARTON_RETURN_IF_ERROR(file_->WriteAt(through_end_, piece));
    through_end_ += piece.size();
    data = data.subspan(piece.size());
  }
  return Status::Ok();
}

Status ZipOutput::MarkWritten(std::uint64_t offset, std::uint64_t size) {
  if (!file_) return Internal(path_ + ": write after commit or abort");
  if (offset != position_ || position_ != size_ || (through_open_ && through_end_ > position_)) {
    return Internal(path_ + ": entry data marked written at offset " + std::to_string(offset) +
                    " while the archive is being written at " + std::to_string(position_));
  }
  through_end_ = offset + size;
  through_open_ = true;
  return Status::Ok();
}

Status ZipOutput::CloseThrough() {
  if (!through_open_) return Status::Ok();
  through_open_ = false;
  if (position_ != through_end_) {
    return Internal(path_ + ": entry data written through up to offset " +
                    std::to_string(through_end_) + ", but libzip wrote up to " +
                    std::to_string(position_));
  }
  return Status::Ok();
}

Status ZipOutput::Write(ByteView data) {
  if (!file_) return Internal(path_ + ": write after commit or abort");
  if (through_open_ && position_ < through_end_) {
    // Already in the file: libzip writes what the entry's source gave it.
    const auto skip =
        static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), through_end_ - position_));
    position_ += skip;
    size_ = std::max(size_, position_);
    data = data.subspan(skip);
    if (data.empty()) return Status::Ok();
  }
  const std::uint64_t end = buffer_start_ + buffered_;
  // Appends and rewrites of buffered bytes stay in the buffer.
  if (position_ >= buffer_start_ && position_ <= end &&
      data.size() <= buffer_.size() - (position_ - buffer_start_)) {
    std::size_t at = static_cast<std::size_t>(position_ - buffer_start_);
    if (!data.empty()) std::memcpy(buffer_.data() + at, data.data(), data.size());
    buffered_ = std::max(buffered_, at + data.size());
  } else {
    CARTON_RETURN_IF_ERROR(Flush());
    if (data.size() >= kDirectWrite) {
      CARTON_RETURN_IF_ERROR(file_->WriteAt(position_, data));
      buffer_start_ = position_ + data.size();
    } else {
      buffer_start_ = position_;
      std::memcpy(buffer_.data(), data.data(), data.size());
      buffered_ = data.size();
    }
  }
  position_ += data.size();
  size_ = std::max(size_, position_);
  return Status::Ok();
}

Status ZipOutput::Commit() {
  if (!file_) return Internal(path_ + ": commit after commit or abort");
  Status s = Flush();
  if (s.ok()) s = file_->Commit();
  file_.reset();
  return s;
}

zip_int64_t ZipOutput::Fail(Status s, int zip_code) {
  int saved = errno;
  if (error_.ok()) error_ = std::move(s);
  zip_error_set(zip_error_.get(), zip_code, saved);
  return -1;
}

zip_int64_t ZipOutput::Callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  return static_cast<ZipOutput*>(self)->Handle(data, len, cmd);
}

zip_int64_t ZipOutput::Handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_SUPPORTS:
      return ZIP_SOURCE_SUPPORTS_WRITABLE;
    case ZIP_SOURCE_STAT:
      // No archive exists yet: libzip starts a new one.
      zip_error_set(zip_error_.get(), ZIP_ER_READ, ENOENT);
      return -1;
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(zip_error_.get(), data, len);
    case ZIP_SOURCE_BEGIN_WRITE:
      if (!file_) return Fail(Internal(path_ + ": output already closed"), ZIP_ER_INTERNAL);
      position_ = size_ = buffer_start_ = 0;
      buffered_ = 0;
      through_end_ = 0;
      through_open_ = false;
      return 0;
    case ZIP_SOURCE_WRITE: {
      Status s =
          Write(ByteView(static_cast<const std::byte*>(data), static_cast<std::size_t>(len)));
      if (!s.ok()) return Fail(std::move(s), ZIP_ER_WRITE);
      return static_cast<zip_int64_t>(len);
    }
    case ZIP_SOURCE_SEEK_WRITE: {
      if (Status s = CloseThrough(); !s.ok()) return Fail(std::move(s), ZIP_ER_INTERNAL);
      zip_int64_t to =
          zip_source_seek_compute_offset(position_, size_, data, len, zip_error_.get());
      if (to < 0) return -1;
      position_ = static_cast<std::uint64_t>(to);
      return 0;
    }
    case ZIP_SOURCE_TELL_WRITE:
      return static_cast<zip_int64_t>(position_);
    case ZIP_SOURCE_COMMIT_WRITE: {
      Status s = CloseThrough();
      if (s.ok()) s = Commit();
      if (!s.ok()) return Fail(std::move(s), ZIP_ER_WRITE);
      return 0;
    }
    case ZIP_SOURCE_ROLLBACK_WRITE:
      Abort();
      return 0;
    case ZIP_SOURCE_REMOVE:
      // Only asked for an archive without entries, which ZipWriter writes
      // itself; there is nothing at the destination to remove.
      return 0;
    case ZIP_SOURCE_FREE:
      return 0;
    default:
      // Reading back is never needed: the archive is new.
      zip_error_set(zip_error_.get(), ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

}  // namespace carton::zip_internal

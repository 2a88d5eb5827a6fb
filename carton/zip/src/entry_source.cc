#include "entry_source.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "carton/common/posix_error.h"
#include "records.h"

namespace carton::zip_internal {
namespace {

constexpr std::size_t kBufferSize = 1 << 20;

}  // namespace

EntrySource::EntrySource(EntryData data, const Spool* spool, const ZipOutput* output,
                         const std::function<void(std::uint64_t)>* on_read)
    : data_(std::move(data)), spool_(spool), output_(output), on_read_(on_read) {}

Result<SourcePtr> EntrySource::MakeSource() {
  LibzipError error;
  zip_source_t* src = zip_source_function_create(&Callback, this, error.get());
  if (src == nullptr) return WriteError(error.get(), "entry " + data_.name);
  return SourcePtr(src);
}

zip_int64_t EntrySource::Fail(Status s, int zip_code) {
  if (error_.ok()) error_ = std::move(s);
  zip_error_set(zip_error_.get(), zip_code, 0);
  return -1;
}

Status EntrySource::Open() {
  const std::string context = "entry " + QuoteName(data_.name);
  if (output_->position() != data_.data_offset) {
    return Internal(context + ": libzip put its data at offset " +
                    std::to_string(output_->position()) + ", not at " +
                    std::to_string(data_.data_offset));
  }
  // A stream is read straight into libzip's buffer.
  buffer_.resize(data_.stream ? 0
                              : static_cast<std::size_t>(
                                    std::min<std::uint64_t>(kBufferSize, data_.compressed_size)));
  buffer_pos_ = buffer_end_ = 0;
  fetched_ = 0;
  if (data_.produce) {
    CARTON_ASSIGN_OR_RETURN(produced_, data_.produce());
    if (produced_.size() != data_.size) {
      return Internal(context + ": produced " + std::to_string(produced_.size()) + " bytes, not " +
                      std::to_string(data_.size));
    }
    return Status::Ok();
  }
  if (data_.file_path.empty()) return Status::Ok();
  fd_.Reset(::open(data_.file_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd_.valid()) {
    return ErrnoIoError(errno, context + ": cannot open " + data_.file_path);
  }
  auto identity = IdentityOfFd(fd_.get());
  if (!identity.ok()) {
    return identity.status().WithContext(context + ": " + data_.file_path);
  }
  if (*identity != data_.identity) {
    return IoError(context + ": " + data_.file_path +
                   " changed between adding it and writing the archive");
  }
  ::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return Status::Ok();
}

Status EntrySource::Refill() {
  const std::size_t want = static_cast<std::size_t>(
      std::min<std::uint64_t>(buffer_.size(), data_.compressed_size - fetched_));
  buffer_pos_ = 0;
  buffer_end_ = 0;
  if (data_.produce) {
    std::memcpy(buffer_.data(), produced_.data() + fetched_, want);
    buffer_end_ = want;
  } else if (data_.file_path.empty()) {
    CARTON_RETURN_IF_ERROR(
        spool_->Read(data_.spool_offset + fetched_, MutableByteView(buffer_.data(), want)));
    buffer_end_ = want;
  } else {
    while (buffer_end_ < want) {
      ssize_t r = ::read(fd_.get(), buffer_.data() + buffer_end_, want - buffer_end_);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoIoError(
            errno, "entry " + QuoteName(data_.name) + ": read of " + data_.file_path + " failed");
      }
      if (r == 0) {
        return IoError("entry " + QuoteName(data_.name) + ": " + data_.file_path +
                       " shrank before it was written");
      }
      buffer_end_ += static_cast<std::size_t>(r);
    }
    if (on_read_ != nullptr && *on_read_) (*on_read_)(buffer_end_);
  }
  fetched_ += buffer_end_;
  return Status::Ok();
}

Status EntrySource::CheckFileEnd() {
  const std::string context = "entry " + QuoteName(data_.name);
  std::byte extra;
  ssize_t r;
  do {
    r = ::read(fd_.get(), &extra, 1);
  } while (r < 0 && errno == EINTR);
  if (r != 0) {
    return IoError(context + ": " + data_.file_path + " grew before it was written");
  }
  auto identity = IdentityOfFd(fd_.get());
  if (!identity.ok() || *identity != data_.identity) {
    return IoError(context + ": " + data_.file_path + " changed while the archive was written");
  }
  return Status::Ok();
}

Result<std::size_t> EntrySource::ReadStream(std::byte* out, std::size_t n) {
  const auto want =
      static_cast<std::size_t>(std::min<std::uint64_t>(n, data_.compressed_size - fetched_));
  if (want == 0) return std::size_t{0};
  CARTON_ASSIGN_OR_RETURN(const std::size_t got,
                          data_.stream(fetched_, MutableByteView(out, want)));
  if (got == 0 || got > want) {
    return Internal("entry " + QuoteName(data_.name) + ": the stream gave " + std::to_string(got) +
                    " bytes for a piece of " + std::to_string(want));
  }
  fetched_ += got;
  return got;
}

Result<std::size_t> EntrySource::Read(std::byte* out, std::size_t n) {
  if (data_.stream) return ReadStream(out, n);
  if (buffer_pos_ == buffer_end_) {
    if (fetched_ == data_.compressed_size) {
      // libzip reads until it gets 0: the moment to check the file.
      if (fd_.valid()) {
        CARTON_RETURN_IF_ERROR(CheckFileEnd());
        fd_.Reset();
      }
      return std::size_t{0};
    }
    CARTON_RETURN_IF_ERROR(Refill());
  }
  const std::size_t k = std::min(n, buffer_end_ - buffer_pos_);
  std::memcpy(out, buffer_.data() + buffer_pos_, k);
  buffer_pos_ += k;
  return k;
}

zip_int64_t EntrySource::Callback(void* self, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  return static_cast<EntrySource*>(self)->Handle(data, len, cmd);
}

zip_int64_t EntrySource::Handle(void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  switch (cmd) {
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                            ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                            ZIP_SOURCE_GET_FILE_ATTRIBUTES, -1);
    case ZIP_SOURCE_STAT: {
      auto* st = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, len, zip_error_.get());
      if (st == nullptr) return -1;
      zip_stat_init(st);
      st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_CRC | ZIP_STAT_COMP_METHOD |
                  ZIP_STAT_ENCRYPTION_METHOD;
      st->size = data_.size;
      st->comp_size = data_.compressed_size;
      st->crc = data_.crc32;
      st->comp_method = data_.method;
      st->encryption_method = ZIP_EM_NONE;
      return sizeof(*st);
    }
    case ZIP_SOURCE_GET_FILE_ATTRIBUTES: {
      auto* a = ZIP_SOURCE_GET_ARGS(zip_file_attributes_t, data, len, zip_error_.get());
      if (a == nullptr) return -1;
      // libzip knows the version deflate and stored entries need, but not
      // zstd's.
      if (data_.method == kMethodZstd) {
        a->valid |= ZIP_FILE_ATTRIBUTES_VERSION_NEEDED;
        a->version_needed = kVersionZstd;
      }
      return 0;
    }
    case ZIP_SOURCE_OPEN: {
      Status s = Open();
      if (!s.ok()) {
        fd_.Reset();
        const int code = s.code() == StatusCode::kInternal ? ZIP_ER_INTERNAL : ZIP_ER_OPEN;
        return Fail(std::move(s), code);
      }
      return 0;
    }
    case ZIP_SOURCE_READ: {
      auto r = Read(static_cast<std::byte*>(data), static_cast<std::size_t>(len));
      if (!r.ok()) return Fail(r.status(), ZIP_ER_READ);
      return static_cast<zip_int64_t>(*r);
    }
    case ZIP_SOURCE_CLOSE:
      fd_.Reset();
      buffer_ = {};
      produced_ = {};
      return 0;
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(zip_error_.get(), data, len);
    case ZIP_SOURCE_FREE:
      // ZipWriter owns this object.
      return 0;
    default:
      zip_error_set(zip_error_.get(), ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

}  // namespace carton::zip_internal

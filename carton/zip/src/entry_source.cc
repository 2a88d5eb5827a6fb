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

// The size of one write-through (ZipOutput's own writes are this size).
constexpr std::size_t kBufferSize = std::size_t{256} << 10;

}  // namespace

EntrySource::EntrySource(EntryData data, const Spool* spool, ZipOutput* output,
                         const std::function<void(std::uint64_t)>* on_read)
    : data_(std::move(data)), spool_(spool), output_(output), on_read_(on_read) {}

Result<SourcePtr> EntrySource::MakeSource() {
  LibzipError error;
  zip_source_t* src = zip_source_function_create(&Callback, this, error.get());
  if (src == nullptr) return WriteError(error.get(), "entry " + data_.name);
  return SourcePtr(src);
}

void EntrySource::UseCopier(FileCopier* copier) {
  if (data_.file_path.empty() || data_.method != kMethodStored ||
      data_.compressed_size < FileCopier::kMinFile) {
    return;
  }
  data_.copier_job = copier->Add({data_.name, data_.file_path, data_.identity, data_.data_offset});
  data_.copier = copier;
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
  chunk_ = {};
  chunk_pos_ = 0;
  fetched_ = 0;
  if (data_.copier != nullptr || data_.prewritten) {
    // In the file already, or about to be: libzip's writes are dropped.
    write_through_ = false;
    std::vector<std::byte>().swap(buffer_);
    return output_->MarkWritten(data_.data_offset, data_.compressed_size);
  }
  write_through_ = data_.compressed_size >= ZipOutput::kWriteThroughMin;
  // Streams and producers give their bytes where they are.
  const bool buffered = !data_.stream && !data_.produce;
  buffer_.resize(buffered ? static_cast<std::size_t>(
                                std::min<std::uint64_t>(kBufferSize, data_.compressed_size))
                          : 0);
  if (data_.produce) {
    CARTON_ASSIGN_OR_RETURN(produced_, data_.produce());
    if (produced_.size() != data_.size) {
      return Internal(context + ": produced " + std::to_string(produced_.size()) + " bytes, not " +
                      std::to_string(data_.size));
    }
    return Status::Ok();
  }
  if (data_.file_path.empty()) return Status::Ok();
  // O_NONBLOCK: a pipe put in the file's place must not hold zip_close (it
  // fails the identity check instead); reads of files ignore it.
  fd_.Reset(::open(data_.file_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
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

Result<ByteView> EntrySource::NextFromStream() {
  const std::uint64_t left = data_.compressed_size - fetched_;
  CARTON_ASSIGN_OR_RETURN(const ByteView got, data_.stream(fetched_));
  if (got.empty() || got.size() > left) {
    return Internal("entry " + QuoteName(data_.name) + ": the stream gave " +
                    std::to_string(got.size()) + " bytes for the " + std::to_string(left) +
                    " left");
  }
  return got;
}

Result<ByteView> EntrySource::NextFromFile(std::size_t want) {
  std::size_t have = 0;
  while (have < want) {
    ssize_t r = ::read(fd_.get(), buffer_.data() + have, want - have);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoIoError(
          errno, "entry " + QuoteName(data_.name) + ": read of " + data_.file_path + " failed");
    }
    if (r == 0) {
      return IoError("entry " + QuoteName(data_.name) + ": " + data_.file_path +
                     " shrank before it was written");
    }
    have += static_cast<std::size_t>(r);
  }
  if (on_read_ != nullptr && *on_read_) (*on_read_)(have);
  return ByteView(buffer_.data(), have);
}

Result<ByteView> EntrySource::NextFromCopier() {
  data_.copier->Give();
  CARTON_ASSIGN_OR_RETURN(ByteView piece, data_.copier->Take(data_.copier_job, fetched_));
  if (on_read_ != nullptr && *on_read_) (*on_read_)(piece.size());
  return piece;
}

Status EntrySource::Refill() {
  const std::size_t want = static_cast<std::size_t>(
      std::min<std::uint64_t>(buffer_.size(), data_.compressed_size - fetched_));
  if (data_.copier != nullptr) {
    CARTON_ASSIGN_OR_RETURN(chunk_, NextFromCopier());
  } else if (data_.stream) {
    CARTON_ASSIGN_OR_RETURN(chunk_, NextFromStream());
  } else if (data_.produce) {
    chunk_ = AsBytes(produced_);
  } else if (data_.file_path.empty()) {
    CARTON_RETURN_IF_ERROR(
        spool_->Read(data_.spool_offset + fetched_, MutableByteView(buffer_.data(), want)));
    chunk_ = ByteView(buffer_.data(), want);
  } else {
    CARTON_ASSIGN_OR_RETURN(chunk_, NextFromFile(want));
  }
  chunk_pos_ = 0;
  if (write_through_) {
    CARTON_RETURN_IF_ERROR(output_->WriteThrough(data_.data_offset + fetched_, chunk_));
  }
  fetched_ += chunk_.size();
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

Result<std::size_t> EntrySource::Read(std::byte* out, std::size_t n) {
  if (data_.prewritten) {
    // libzip copies compressed bytes as they are, into the output, which
    // drops them: its buffer is left as it is.
    const auto k =
        static_cast<std::size_t>(std::min<std::uint64_t>(n, data_.compressed_size - fetched_));
    fetched_ += k;
    return k;
  }
  if (chunk_pos_ == chunk_.size()) {
    if (fetched_ == data_.compressed_size) {
      // libzip reads until it gets 0: the moment to check the file.
      if (data_.copier != nullptr) {
        data_.copier->Give();
        CARTON_RETURN_IF_ERROR(data_.copier->JobStatus(data_.copier_job));
      }
      if (fd_.valid()) {
        CARTON_RETURN_IF_ERROR(CheckFileEnd());
        fd_.Reset();
      }
      return std::size_t{0};
    }
    CARTON_RETURN_IF_ERROR(Refill());
  }
  const std::size_t k = std::min(n, chunk_.size() - chunk_pos_);
  std::memcpy(out, chunk_.data() + chunk_pos_, k);
  chunk_pos_ += k;
  return k;
}

void EntrySource::Close() {
  if (data_.copier != nullptr) data_.copier->Give();
  fd_.Reset();
  chunk_ = {};
  // Freed, not just emptied (`= {}` keeps the capacity): an archive of
  // 100,000 small files kept 4 KiB per entry until zip_close returned.
  std::vector<std::byte>().swap(buffer_);
  std::string().swap(produced_);
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
      Close();
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

// PartialFile: what arrived of an interrupted download, kept to be resumed.
// Private to net/src.
//
// The bytes live in `<dest>.partial` and the response's validator (its
// ETag, else its Last-Modified), which the next request sends as If-Range,
// in `<dest>.partial-validator`. Unlike an AtomicFile's temporary, the file
// survives failures and interrupts; it only becomes `dest` by rename once
// the whole file's size and sha256 are right, and is removed when its
// bytes turn out wrong. The caller must keep other fetches of the same
// destination out (BlobCache holds the blob's lock). Move-only; not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"
#include "carton/net/fetch.h"

namespace carton::net {

class PartialFile {
 public:
  // Opens `dest`.partial, creating it empty if absent. Errors: kIoError.
  static Result<PartialFile> Open(const std::string& dest);

  // Bytes already there.
  std::uint64_t size() const { return size_; }
  // The file (open for reading and writing), until Commit() or Discard().
  int fd() const { return fd_.get(); }
  // The validator saved with them ("" when none).
  const std::string& validator() const { return validator_; }

  // Hands the bytes already there to `fn`, in order. Errors: kIoError.
  Status ReadPrefix(const std::function<void(ByteView)>& fn) const;
  // Drops the bytes and the validator: the download starts over.
  Status Restart();
  Status SaveValidator(const std::string& validator);
  // Appends `bytes`. Errors: kIoError.
  Status Append(ByteView bytes);
  // Renames the file to `dest` and removes the validator. Errors: kIoError.
  Status Commit();
  // Removes the file and the validator (their bytes were wrong).
  void Discard();

 private:
  std::string dest_;
  std::string path_;
  UniqueFd fd_;
  std::uint64_t size_ = 0;
  std::string validator_;
};

}  // namespace carton::net

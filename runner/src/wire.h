// Private: tensors as safetensors bytes (runner/PROTOCOL.md "Tensors"),
// in files and in sealed memfds passed over a Unix socket.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "carton/common/bytes.h"
#include "carton/common/status.h"
#include "carton/common/unique_fd.h"
#include "carton/format/tensor.h"
#include "carton/safetensors/file.h"

namespace carton::runner::internal {

// Decodes every tensor of a validated safetensors file, in the order its
// metadata records (else by name). Numeric tensors view `file`'s bytes and
// keep `owner` alive. Untrusted input. Errors: kCorrupt, kUnsupported (a
// dtype carton has no name for).
Result<std::vector<Tensor>> DecodeTensors(const safetensors::File& file,
                                          std::shared_ptr<const void> owner);

// The same for one tensor `name` of `file`, renamed to `as`.
Result<Tensor> DecodeTensor(const safetensors::File& file, std::string_view name, std::string as,
                            std::shared_ptr<const void> owner);

// Writes `tensors` as a safetensors file at `path` (atomically).
Status WriteTensorsFile(const std::string& path, const std::vector<Tensor>& tensors);

// The writer's side of a shared-memory arena: a memfd sealed against
// shrinking (so a reader's mapping can never lose pages under it), mapped
// once and reused for every message; it is replaced by a larger one only
// when a message does not fit. Move-only.
class Arena {
 public:
  Arena() = default;
  Arena(Arena&&) noexcept;
  Arena& operator=(Arena&&) noexcept;
  ~Arena();

  // Serializes `tensors` into the arena (one copy of the bytes) and returns
  // the size used. `*replaced` is set when a new memfd was made: its fd()
  // must go with the message.
  Result<std::size_t> Write(const std::vector<Tensor>& tensors, bool* replaced);
  int fd() const { return fd_.get(); }

 private:
  Status Reserve(std::size_t n, bool* replaced);
  UniqueFd fd_;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// The reader's side: maps the peer's arena read-only (remapping when a new
// fd arrives) and decodes a message from it. Views keep their mapping
// alive, but the peer reuses the bytes for its next message.
class ArenaReader {
 public:
  // Takes a new arena fd. Errors: kCorrupt if it is not a memfd sealed
  // against shrinking; kIoError.
  Status Adopt(UniqueFd fd);
  // Decodes the first `size` bytes. Untrusted. Errors: kCorrupt (no arena,
  // size past its end, bad safetensors).
  Result<std::vector<Tensor>> Read(std::size_t size) const;

 private:
  struct Mapping;
  std::shared_ptr<const Mapping> mapping_;
};

// One message on a SOCK_SEQPACKET socket: text (at most kMaxMessage bytes)
// and at most one file descriptor.
inline constexpr std::size_t kMaxMessage = 64 * 1024;
Status SendMessage(int sock, std::string_view text, int fd_or_minus1);
// Waits up to `timeout_ms` (-1: forever). An orderly close by the peer is
// kNotFound "closed". Errors: kIoError, kInternal (timeout; message says so).
struct Message {
  std::string text;
  UniqueFd fd;
};
Result<Message> ReceiveMessage(int sock, int timeout_ms);

}  // namespace carton::runner::internal

namespace carton::runner::internal {

// JSON texts of the serve protocol (PROTOCOL.md "serve").
std::string ErrorReply(const Status& status);
// The Status an error reply carries; OK for a reply with "ok": true.
// kInternal for a reply that is not valid protocol.
Status StatusOfReply(std::string_view text);

}  // namespace carton::runner::internal

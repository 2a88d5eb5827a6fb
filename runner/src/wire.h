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
// when a message does not fit. `name` is the memfd's name (it shows in
// /proc/PID/maps and /proc/PID/fd). Move-only.
class Arena {
 public:
  explicit Arena(const char* name = "carton-tensors") : name_(name) {}
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
  const char* name_;
  UniqueFd fd_;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// A peer's arena mapped into this process, whole, until destroyed (the fd
// itself is closed once mapped). Read-only, or writable: writes then reach
// the peer's memfd, which is harmless only where the protocol says the peer
// never reads it back (a runner's output arenas).
class ArenaMapping {
 public:
  // Errors: kCorrupt if `fd` is not a memfd sealed against shrinking, or is
  // empty; kIoError (cannot map, e.g. a memfd sealed against writing when
  // `writable`).
  static Result<std::shared_ptr<const ArenaMapping>> Map(UniqueFd fd, bool writable);
  ArenaMapping(const ArenaMapping&) = delete;
  ArenaMapping& operator=(const ArenaMapping&) = delete;
  ~ArenaMapping();

  // Decodes the first `size` bytes. Untrusted. Numeric tensors view the
  // mapping and hold `owner`, which must keep this mapping alive. Errors:
  // kCorrupt (size past the end, bad safetensors).
  Result<std::vector<Tensor>> Read(std::size_t size, std::shared_ptr<const void> owner) const;

 private:
  ArenaMapping() = default;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// The reader's side of one arena that the peer reuses for every message:
// maps it read-only (remapping when a new fd arrives) and decodes a message
// from it. Views keep their mapping alive, but the peer reuses the bytes
// for its next message.
class ArenaReader {
 public:
  // Takes a new arena fd. Errors: as ArenaMapping::Map.
  Status Adopt(UniqueFd fd);
  // Decodes the first `size` bytes. Untrusted. Errors: kCorrupt (no arena,
  // size past its end, bad safetensors).
  Result<std::vector<Tensor>> Read(std::size_t size) const;

 private:
  std::shared_ptr<const ArenaMapping> mapping_;
};

// A runner's output arenas (PROTOCOL.md "serve"): at most kMaxOutputArenas
// kept, numbered from 0. Each reply goes into the lowest-numbered arena the
// caller does not hold ("busy"), a new one being made only when every kept
// arena is busy; when kMaxOutputArenas are kept and all are busy, the reply
// goes into a one-off arena that is not kept (its fd goes with the reply).
inline constexpr std::size_t kMaxOutputArenas = 8;
class OutputArenas {
 public:
  struct Written {
    std::size_t size = 0;             // bytes of the message
    int arena = -1;                   // the arena's number; -1 for a one-off
    int fd = -1;                      // to send with the reply (a new memfd), else -1
    Arena one_off{"carton-outputs"};  // owns a one-off's memfd until sent
  };
  // Writes `tensors` into an arena whose number is not in `busy` (numbers
  // that name no arena are ignored). Errors: as Arena::Write.
  Result<Written> Write(const std::vector<Tensor>& tensors, const std::vector<int>& busy);
  std::size_t kept() const { return arenas_.size(); }

 private:
  std::vector<Arena> arenas_;
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

// Status and Result<T>: how every carton function reports failure.
//
// Malformed or hostile input is a normal outcome for a file parser, so errors
// are values. A Status is a code from the small set below plus a message; a
// Result<T> is either a value or a non-OK Status. No exception crosses a
// public carton API.
//
// Codes, one rule each:
//   kInvalidArgument  the caller asked for something impossible (bad option,
//                     bad slice, duplicate tensor name given to a writer).
//   kNotFound         a named thing (file, tensor, entry) does not exist.
//   kCorrupt          bytes break the format, or a hash does not match.
//   kUnsupported      valid but unknown to us (version, dtype, method).
//   kIoError          the operating system failed a read, write or open.
//   kNetworkError     a transfer failed.
//   kInternal         a bug in carton.
//   kModelError       the model's own code failed while it ran (it raised
//                     an exception); model_exception() says what it raised.
//
// A module may refine kCorrupt/kUnsupported with a `detail` number of its own
// (safetensors uses it for one kind per validation rule); 0 means none.
//
// Thread-safety: plain values; safe to copy and move between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace carton {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kCorrupt,
  kUnsupported,
  kIoError,
  kNetworkError,
  kInternal,
  kModelError,  // last: the C API's codes are these values (capi/errors.cc)
};

// Lowercase name of a code ("corrupt", "io error", ...).
std::string_view StatusCodeName(StatusCode code);

// What a model's own code raised (a kModelError status): the exception's
// type as its language names it ("ValueError", "RuntimeError") and its
// message, without carton's context or the traceback, which the status's
// message keeps.
struct ModelException {
  std::string type;
  std::string message;
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, int detail = 0)
      : code_(code), detail_(detail), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  int detail() const { return detail_; }
  const std::string& message() const { return message_; }
  // What the model raised, for a kModelError status made by ModelError();
  // nullptr otherwise. Valid as long as this status (or a copy) lives.
  const ModelException* model_exception() const { return model_exception_.get(); }

  // Returns a copy whose message is "<context>: <message>", or the status
  // itself when the message already names the context (as one of its
  // "part: " prefixes, or quoted): each error names a file once. OK stays
  // OK.
  Status WithContext(std::string_view context) const;

  // "<code name>: <message>", or "ok".
  std::string ToString() const;

 private:
  friend Status ModelError(std::string msg, ModelException exception);

  StatusCode code_ = StatusCode::kOk;
  int detail_ = 0;
  std::string message_;
  // Shared by copies: set once, never changed.
  std::shared_ptr<const ModelException> model_exception_;
};

inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status Corrupt(std::string msg, int detail = 0) {
  return Status(StatusCode::kCorrupt, std::move(msg), detail);
}
inline Status Unsupported(std::string msg, int detail = 0) {
  return Status(StatusCode::kUnsupported, std::move(msg), detail);
}
inline Status IoError(std::string msg) { return Status(StatusCode::kIoError, std::move(msg)); }
inline Status NetworkError(std::string msg) {
  return Status(StatusCode::kNetworkError, std::move(msg));
}
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
// A kModelError status: `msg` says what failed, with the context and
// traceback people need; `exception` is what the model raised.
Status ModelError(std::string msg, ModelException exception);

namespace status_internal {
// Prints "Result::value() on an error: <status>" to stderr and aborts.
[[noreturn]] void DieOnErrorValue(const Status& status);
}  // namespace status_internal

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // The value. On an error, a bug in the caller: the process aborts,
  // printing the status to stderr.
  T& value() & { return *Checked(); }
  const T& value() const& { return *Checked(); }
  T&& value() && { return std::move(*Checked()); }
  T* operator->() { return &*Checked(); }
  const T* operator->() const { return &*Checked(); }
  T& operator*() & { return *Checked(); }
  const T& operator*() const& { return *Checked(); }

 private:
  std::optional<T>& Checked() {
    if (!value_.has_value()) status_internal::DieOnErrorValue(status_);
    return value_;
  }
  const std::optional<T>& Checked() const {
    if (!value_.has_value()) status_internal::DieOnErrorValue(status_);
    return value_;
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace carton

#define CARTON_CONCAT_INNER_(a, b) a##b
#define CARTON_CONCAT_(a, b) CARTON_CONCAT_INNER_(a, b)

// Returns from the current function if `expr` (a Status) is not OK.
#define CARTON_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::carton::Status carton_status_ = (expr);        \
    if (!carton_status_.ok()) return carton_status_; \
  } while (0)

// `lhs = value of rexpr` (a Result), or returns its Status.
#define CARTON_ASSIGN_OR_RETURN(lhs, rexpr) \
  CARTON_ASSIGN_OR_RETURN_IMPL_(CARTON_CONCAT_(carton_result_, __LINE__), lhs, rexpr)
#define CARTON_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

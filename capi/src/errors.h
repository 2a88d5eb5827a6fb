// The boundary between C callers and the C++ library: every entry point
// runs its body through Guard, which maps a carton::Status to a
// carton_status, records the message for carton_last_error() and turns any
// exception into CARTON_ERR_INTERNAL, so nothing C++ crosses into C.
// Thread-safety: the last error is per thread.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "carton/c/carton.h"
#include "carton/common/status.h"

namespace carton::capi {

// Records `message` as this thread's last error (never throws: when it
// cannot be stored, a fixed message takes its place).
void SetLastError(std::string_view message) noexcept;

// What carton_last_error() returns.
const char* LastError() noexcept;

// The C code of a library status.
carton_status ToCStatus(StatusCode code) noexcept;

// Records the status and returns its code.
carton_status Report(const Status& status) noexcept;

// Runs `body(function)` (returning a Status) for C function `function`;
// the body names the function in its messages.
template <typename Body>
carton_status Guard(const char* function, Body&& body) noexcept {
  try {
    return Report(body(function));
  } catch (const std::bad_alloc&) {
    SetLastError(std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    SetLastError(std::string(function) + ": unexpected error: " + e.what());
  } catch (...) {
    SetLastError(std::string(function) + ": unexpected error");
  }
  return CARTON_ERR_INTERNAL;
}

// kInvalidArgument "<function>: <what> is NULL".
Status NullArgument(const char* function, const char* what);

// OK when `p` is not NULL, else NullArgument.
inline Status Require(const void* p, const char* function, const char* what) {
  return p != nullptr ? Status::Ok() : NullArgument(function, what);
}

// kInvalidArgument "<function>: <what> <index> is out of range (<count> ...)".
Status OutOfRange(const char* function, const char* what, std::size_t index, std::size_t count);

}  // namespace carton::capi

// Turning a failed system call's errno into a Status, in one place.
//
// Messages read "<context>: <the system's text for the error>", e.g.
// "model.carton: cannot open: No such file or directory". ErrnoStatus
// reports a path that does not exist (ENOENT) as kNotFound, every other
// failure as kIoError; ErrnoIoError always gives kIoError, for calls where
// ENOENT cannot mean that a path the caller named is missing (a read or
// write of an open file, a lock, a pipe).
//
// Pass errno explicitly and before anything else can change it.
// Thread-safety: pure functions (the system text is read with the
// thread-safe strerror_r).
#pragma once

#include <string>
#include <string_view>

#include "carton/common/status.h"

namespace carton {

// The system's text for `err` ("No such file or directory").
std::string ErrnoText(int err);

// kNotFound when `err` is ENOENT, else kIoError; "<context>: <text>".
Status ErrnoStatus(int err, std::string_view context);

// kIoError "<context>: <text>" whatever `err` is.
Status ErrnoIoError(int err, std::string_view context);

}  // namespace carton

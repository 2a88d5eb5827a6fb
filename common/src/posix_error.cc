#include "carton/common/posix_error.h"

#include <cerrno>
#include <cstring>

namespace carton {
namespace {

std::string Message(int err, std::string_view context) {
  std::string out(context);
  out += ": ";
  out += ErrnoText(err);
  return out;
}

}  // namespace

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the text, which may or may not be in `buf`.
  return ::strerror_r(err, buf, sizeof(buf));
}

Status ErrnoStatus(int err, std::string_view context) {
  if (err == ENOENT) return NotFound(Message(err, context));
  return IoError(Message(err, context));
}

Status ErrnoIoError(int err, std::string_view context) { return IoError(Message(err, context)); }

}  // namespace carton

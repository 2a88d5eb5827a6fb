#include "carton/common/status.h"

#include <cstdio>
#include <cstdlib>

namespace carton {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kCorrupt:
      return "corrupt";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "io error";
    case StatusCode::kNetworkError:
      return "network error";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg;
  msg.reserve(context.size() + 2 + message_.size());
  msg.append(context).append(": ").append(message_);
  return Status(code_, std::move(msg), detail_);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s.append(": ").append(message_);
  return s;
}

namespace status_internal {

void DieOnErrorValue(const Status& status) {
  std::fprintf(stderr, "Result::value() on an error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace status_internal

}  // namespace carton

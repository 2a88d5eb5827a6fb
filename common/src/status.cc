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
    case StatusCode::kModelError:
      return "model error";
  }
  return "unknown";
}

namespace {

// Whether `message` already names `context`: as its first part
// ("<context>: ..."), as a later part ("...: <context>: ...") or quoted
// ("entry \"<context>\"").
bool Names(std::string_view message, std::string_view context) {
  if (context.empty()) return true;
  const std::string part = std::string(context) + ": ";
  if (message.starts_with(part)) return true;
  if (message.find(": " + part) != std::string_view::npos) return true;
  return message.find('"' + std::string(context) + '"') != std::string_view::npos;
}

}  // namespace

Status Status::WithContext(std::string_view context) const {
  if (ok() || Names(message_, context)) return *this;
  std::string msg;
  msg.reserve(context.size() + 2 + message_.size());
  msg.append(context).append(": ").append(message_);
  Status with(code_, std::move(msg), detail_);
  with.model_exception_ = model_exception_;
  return with;
}

Status ModelError(std::string msg, ModelException exception) {
  Status s(StatusCode::kModelError, std::move(msg));
  s.model_exception_ = std::make_shared<const ModelException>(std::move(exception));
  return s;
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

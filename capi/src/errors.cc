#include "errors.h"

namespace carton::capi {
namespace {

// The C codes are the library's, value for value.
static_assert(CARTON_OK == static_cast<int>(StatusCode::kOk));
static_assert(CARTON_ERR_INVALID_ARGUMENT == static_cast<int>(StatusCode::kInvalidArgument));
static_assert(CARTON_ERR_NOT_FOUND == static_cast<int>(StatusCode::kNotFound));
static_assert(CARTON_ERR_CORRUPT == static_cast<int>(StatusCode::kCorrupt));
static_assert(CARTON_ERR_UNSUPPORTED == static_cast<int>(StatusCode::kUnsupported));
static_assert(CARTON_ERR_IO == static_cast<int>(StatusCode::kIoError));
static_assert(CARTON_ERR_NETWORK == static_cast<int>(StatusCode::kNetworkError));
static_assert(CARTON_ERR_INTERNAL == static_cast<int>(StatusCode::kInternal));
static_assert(CARTON_ERR_MODEL == static_cast<int>(StatusCode::kModelError));

// The message, and what carton_last_error() returns: a pointer into
// `message`, or a fixed text when storing the message failed.
thread_local std::string message;
thread_local const char* current = "";

}  // namespace

void SetLastError(std::string_view text) noexcept {
  try {
    message.assign(text);
    current = message.c_str();
  } catch (...) {
    current = "out of memory (the error message could not be stored)";
  }
}

carton_status ToCStatus(StatusCode code) noexcept {
  return code <= StatusCode::kModelError ? static_cast<carton_status>(code) : CARTON_ERR_INTERNAL;
}

carton_status Report(const Status& status) noexcept {
  SetLastError(status.ok() ? std::string_view() : std::string_view(status.message()));
  return ToCStatus(status.code());
}

Status NullArgument(const char* function, const char* what) {
  return InvalidArgument(std::string(function) + ": " + what + " is NULL");
}

Status OutOfRange(const char* function, const char* what, std::size_t index, std::size_t count) {
  return InvalidArgument(std::string(function) + ": " + what + " " + std::to_string(index) +
                         " is out of range (there are " + std::to_string(count) + ")");
}

const char* LastError() noexcept { return current; }

}  // namespace carton::capi

extern "C" {

unsigned carton_abi_version(void) { return CARTON_C_ABI_VERSION; }

const char* carton_last_error(void) { return carton::capi::LastError(); }

const char* carton_status_name(carton_status status) {
  // Names are string literals (NUL-terminated).
  if (status < CARTON_OK || status > CARTON_ERR_MODEL) return "unknown";
  return carton::StatusCodeName(static_cast<carton::StatusCode>(status)).data();
}

}  // extern "C"

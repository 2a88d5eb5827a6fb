#include "libzip.h"

#include <cctype>

namespace carton::zip_internal {
namespace {

std::string WithContext(std::string_view context, std::string message) {
  if (context.empty()) return message;
  return std::string(context) + ": " + message;
}

}  // namespace

std::string DescribeLibzipError(zip_error_t* error) {
  std::string s = zip_error_strerror(error);
  // "Zip archive inconsistent" -> "zip archive inconsistent"; acronyms such
  // as "CRC error" stay as they are.
  if (s.size() >= 2 && std::isupper(static_cast<unsigned char>(s[0])) &&
      std::islower(static_cast<unsigned char>(s[1]))) {
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  }
  return s;
}

Status ReadError(zip_error_t* error, std::string_view context) {
  std::string message = WithContext(context, DescribeLibzipError(error));
  switch (zip_error_code_zip(error)) {
    case ZIP_ER_MULTIDISK:
    case ZIP_ER_COMPNOTSUPP:
    case ZIP_ER_ENCRNOTSUPP:
    case ZIP_ER_NOPASSWD:
      return Unsupported(std::move(message));
    case ZIP_ER_MEMORY:
      return IoError(std::move(message));
    default:
      // Over a buffer, every other failure (including a seek or read that
      // libzip's buffer source refuses) comes from offsets or data in the
      // archive.
      return Corrupt(std::move(message));
  }
}

Status WriteError(zip_error_t* error, std::string_view context) {
  std::string message = WithContext(context, DescribeLibzipError(error));
  switch (zip_error_code_zip(error)) {
    case ZIP_ER_RENAME:
    case ZIP_ER_CLOSE:
    case ZIP_ER_SEEK:
    case ZIP_ER_READ:
    case ZIP_ER_WRITE:
    case ZIP_ER_OPEN:
    case ZIP_ER_TMPOPEN:
    case ZIP_ER_REMOVE:
    case ZIP_ER_TELL:
    case ZIP_ER_MEMORY:
      return IoError(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

}  // namespace carton::zip_internal
